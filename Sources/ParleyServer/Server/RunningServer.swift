import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ParleyCore
import ParleyStorage
import ParleyStream
import ParleyTLS
import Prometheus

/// A started server: its listeners, its shared state, and the way to stop it. Tests start
/// one directly (port 0) and read the ports it got.
public final class RunningServer: Sendable {
    public let configuration: ServerConfiguration
    /// Where clients can connect: STARTTLS listeners, then direct TLS ones.
    public let c2sAddresses: [SocketAddress]
    public let directTLSAddresses: [SocketAddress]
    public let metricsAddress: SocketAddress?
    /// SHA-256 fingerprint of the certificate the server presents.
    public let certificateFingerprint: String?
    public let certificatePath: String
    public let context: ServerContext
    /// The configured backend's stores: SQLite, or what the caller passed to `start`.
    public let storage: any ServerStorage
    let offline: OfflineModule
    let archive: ArchiveModule
    /// The PEP service (XEP-0163), unless turned off.
    public let pep: PEPService?
    let lastActivity: LastActivityModule

    private let listeners: [any Channel]
    /// The cluster this node belongs to, if `cluster.enabled`.
    private let cluster: (any ClusterMember)?
    private let tracker: ConnectionTracker
    private let background: NIOLockedValueBox<[Task<Void, Never>]>
    private let stopped: EventLoopPromise<Void>
    private let isStopping = NIOLockedValueBox(false)
    private let logger: Logger

    public var c2sPort: Int { c2sAddresses.first?.port ?? 0 }
    public var directTLSPort: Int { directTLSAddresses.first?.port ?? 0 }

    private init(
        configuration: ServerConfiguration, c2sAddresses: [SocketAddress], directTLSAddresses: [SocketAddress],
        metricsAddress: SocketAddress?, certificateFingerprint: String?, certificatePath: String, context: ServerContext,
        storage: any ServerStorage, offline: OfflineModule, archive: ArchiveModule, pep: PEPService?, lastActivity: LastActivityModule,
        listeners: [any Channel], tracker: ConnectionTracker, background: [Task<Void, Never>],
        stopped: EventLoopPromise<Void>, logger: Logger, cluster: (any ClusterMember)?
    ) {
        self.cluster = cluster
        self.configuration = configuration
        self.c2sAddresses = c2sAddresses
        self.directTLSAddresses = directTLSAddresses
        self.metricsAddress = metricsAddress
        self.certificateFingerprint = certificateFingerprint
        self.certificatePath = certificatePath
        self.context = context
        self.storage = storage
        self.offline = offline
        self.archive = archive
        self.pep = pep
        self.lastActivity = lastActivity
        self.listeners = listeners
        self.tracker = tracker
        self.background = NIOLockedValueBox(background)
        self.stopped = stopped
        self.logger = logger
    }

    public static func start(
        configuration: ServerConfiguration, logger: Logger,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        prometheus: PrometheusCollectorRegistry? = nil, hostedServices: [any HostedService] = [],
        storage configuredStorage: (any ServerStorage)? = nil, cluster: (any ClusterMember)? = nil
    ) async throws -> RunningServer {
        let domain = try JID(configuration.domain)
        // Before anything parses an address: one copy of each long domain for all of them.
        JID.shareDomain(domain.domainpart)
        for service in hostedServices { JID.shareDomain(service.domain) }
        try FileManager.default.createDirectory(atPath: configuration.dataDirectory, withIntermediateDirectories: true)

        let certificatePath = configuration.tlsCertificatePath
        let keyPath = configuration.tlsKeyPath
        let fingerprint: String
        if configuration.tls.certificate == nil, configuration.tls.key == nil {
            try FileManager.default.createDirectory(
                atPath: (certificatePath as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            fingerprint = try SelfSignedCertificate.createIfMissing(
                certificatePath: certificatePath, privateKeyPath: keyPath, domain: domain.domainpart)
        } else {
            fingerprint = try CertificateFingerprint.sha256(pemFile: certificatePath)
        }
        let tls = try TLSContext(server: TLSServerConfiguration(certificateChain: .file(certificatePath), privateKey: .file(keyPath)))

        // Another backend (PostgreSQL) is opened by the caller, which imports it; SQLite is the default.
        let storage: any ServerStorage =
            try configuredStorage ?? SQLiteStorage(path: configuration.sqlitePath, options: FaultInjection.storageOptions())

        let sessions = SessionRegistry()
        let events = ServerEventBus()
        let hosted = try HostedServices(hostedServices, serverDomain: domain, events: events)
        let registration = RegistrationModule(
            accounts: storage, domain: domain, allowsNewAccounts: configuration.registration.enabled,
            minimumPasswordLength: configuration.registration.minPasswordLength,
            iterations: configuration.auth.scramIterations)
        let blocking = BlockingModule(store: storage, rosters: storage, sessions: sessions, logger: logger, domain: domain, events: events)
        try await blocking.load(domain: domain)
        let offline = OfflineModule(
            domain: domain, store: storage, quota: configuration.offline.quota, sessions: sessions, logger: logger)
        let presence = PresenceModule(
            domain: domain, sessions: sessions, rosters: storage, accounts: storage, policy: blocking, events: events,
            logger: logger, hosted: hosted, afterInitialPresence: { session in await offline.deliver(to: session) })
        var rosterLimits = RosterModule.Limits()
        rosterLimits.maxItems = configuration.roster.maxItems
        let roster = RosterModule(rosters: storage, presence: presence, sessions: sessions, limits: rosterLimits)
        let archive = ArchiveModule(
            domain: domain, store: storage, maxMessagesPerUser: configuration.archive.maxMessagesPerUser, logger: logger)
        let carbons = CarbonsModule(sessions: sessions)
        let metrics = ServerMetrics()
        let duplicates = DuplicateMessageModule(
            domain: domain, archive: configuration.archive.enabled ? storage : nil, sessions: sessions, events: events,
            metrics: metrics, logger: logger)
        let disco = DiscoModule()
        var modules: [any ServerModule] = [
            disco, PingModule(), VersionModule(), registration, roster, presence, offline, blocking, carbons, duplicates,
        ]
        let profiles = ProfileService(vCards: storage, privateXML: storage, limits: .init(configuration))
        let lastActivity = LastActivityModule(store: storage, rosters: storage, sessions: sessions, events: events, logger: logger)
        modules += [VCardModule(profiles: profiles), PrivateXMLModule(profiles: profiles), lastActivity]
        if configuration.archive.enabled { modules.append(archive) }
        if configuration.streamManagement.enabled { modules.append(StreamManagementModule()) }
        let requests = ServerIQRequests(domain: domain)
        var pep: PEPService? = nil
        if configuration.pep.enabled {
            let service = PEPService(
                domain: domain, store: storage, rosters: storage, sessions: sessions, policy: blocking, events: events,
                requests: requests, limits: PEPService.Limits(configuration.pep), logger: logger)
            modules.append(PEPModule(service: service))
            disco.extendAccounts(with: service.discoExtension)
            pep = service
            // XEP-0398 and XEP-0411: old and new clients see one avatar, nick and bookmark list.
            let avatars = AvatarConversion(pep: service, profiles: profiles, events: events, logger: logger)
            presence.addAvailablePresenceStamp { presence, sender in await avatars.stamp(&presence, from: sender) }
            modules += [avatars, BookmarksConversion(pep: service, profiles: profiles, events: events, logger: logger)]
        }
        modules += [ContactAddressesModule(configuration.contactInfo), ExternalServicesModule(configuration.turn)]
        var registry = ModuleRegistry()
        for module in modules { try module.register(in: &registry) }
        disco.publish(from: registry)
        disco.listServerItems(hosted.discoItems)

        let policy = C2SPolicy(configuration: configuration, domain: domain)
        let router = StanzaRouter(domain: domain, sessions: sessions, modules: registry, policy: blocking, logger: logger, requests: requests,
            hosted: hosted)
        try await hosted.start(router: router, storage: storage)
        let limits = configuration.limits
        let context = try ServerContext(
            policy: policy, sessions: sessions, router: router, accounts: storage, registration: registration, tls: tls,
            connectionLimiter: ConnectionLimiter(perAddress: limits.connectionsPerIP, total: limits.maxConnections),
            authFailures: AuthFailureLimiter(maxFailures: limits.authFailuresPerIP, window: TimeAmount(limits.authFailureWindow)),
            metrics: metrics, events: events, streamFeatures: registry.streamFeatures + [disco.serverCapabilities.streamFeature],
            logger: logger,
            archive: configuration.archive.enabled ? archive : nil)
        // After the context: a session handed over to another node leaves its resumption registry.
        if let cluster {
            sessions.attach(cluster)
            try await cluster.start(
                ClusterHost(
                    domain: domain, sessions: sessions, router: router, eventLoop: group.next(), logger: logger,
                    offlineStored: { offline.deliverIfAvailable($0) }, blocking: blocking, offline: offline,
                    hostedServices: hostedServices,
                    handOver: { await context.handOverSession(previd: $0, user: $1, accountID: $2) },
                    sessionsLost: { presence.remoteSessionsLost($0) }))
        }

        let tracker = context.connections
        var listeners: [any Channel] = []
        var c2s: [SocketAddress] = []
        var direct: [SocketAddress] = []
        let parserLimits = XMLStreamParser.Limits(maxStanzaBytes: limits.maxStanzaBytes, maxDepth: limits.maxDepth)
        let keepalive = StreamKeepaliveHandler.Configuration(
            whitespaceInterval: configuration.keepalive.whitespaceInterval.map(TimeAmount.init),
            pingAfter: configuration.keepalive.pingAfter.map(TimeAmount.init),
            idleTimeout: TimeAmount(configuration.keepalive.idleTimeout))
        do {
            for host in configuration.c2s.interfaces {
                var settings = C2SListener.Settings(
                    host: host, port: configuration.c2s.port, directTLS: false, parserLimits: parserLimits, keepalive: keepalive)
                let plain = try await C2SListener.bind(settings, server: context, group: group)
                listeners.append(plain)
                if let address = plain.localAddress { c2s.append(address) }
                if configuration.c2s.directTLSPort != 0 {
                    let port = configuration.c2s.directTLSPort
                    settings.port = port == ServerConfiguration.C2S.anyFreePort ? 0 : port
                    settings.directTLS = true
                    let secure = try await C2SListener.bind(settings, server: context, group: group)
                    listeners.append(secure)
                    if let address = secure.localAddress { direct.append(address) }
                }
            }
        } catch {
            for listener in listeners { try? await listener.close() }
            throw error
        }

        var metricsAddress: SocketAddress? = nil
        if configuration.metrics.enabled, let prometheus {
            let endpoint = try await MetricsEndpoint.bind(
                host: configuration.metrics.address, port: configuration.metrics.port, registry: prometheus, group: group)
            listeners.append(endpoint)
            metricsAddress = endpoint.localAddress
        }

        let watcher = AccountChangeWatcher(feed: storage, sessions: sessions, domain: domain, logger: logger,
            interval: configuration.sessions.accountChangePollInterval, events: events)
        let authFailures = context.authFailures
        let retentionDays = configuration.archive.retentionDays
        let eventLoops = Array(group.makeIterator())
        let background = [
            Task { await watcher.run() },
            Task.detached {
                MemoryTrimmer.configureAllocator()
                await MemoryTrimmer(interval: .seconds(5), eventLoops: eventLoops).run()
            },
            Task {
                guard retentionDays > 0 else { return }
                while !Task.isCancelled {
                    do {
                        let pruned = try await storage.pruneArchive(before: Date().addingTimeInterval(-Double(retentionDays) * 86_400))
                        if pruned > 0 { logger.info("pruned the message archive", metadata: ["messages": "\(pruned)"]) }
                    } catch {
                        logger.error("cannot prune the message archive", metadata: ["error": "\(error)"])
                    }
                    try? await Task.sleep(for: .seconds(3600))
                }
            },
            Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(60))
                    authFailures.prune()
                }
            },
        ]
        return RunningServer(
            configuration: configuration, c2sAddresses: c2s, directTLSAddresses: direct, metricsAddress: metricsAddress,
            certificateFingerprint: fingerprint, certificatePath: certificatePath, context: context, storage: storage, offline: offline, archive: archive,
            pep: pep, lastActivity: lastActivity, listeners: listeners, tracker: tracker, background: background,
            stopped: group.next().makePromise(of: Void.self), logger: logger, cluster: cluster)
    }

    /// Counts a client connection another listener accepted (the HTTP service's WebSocket
    /// endpoint) among the server's, so shutdown tells it `<system-shutdown/>` too.
    public func trackConnection(_ channel: any Channel) {
        tracker.track(channel)
    }

    /// Tells every connection `<system-shutdown/>` (or the configured redirect) now. The HTTP
    /// service stops first and waits for its connections; upgraded WebSocket connections are
    /// among them, and until told they kept that wait going until the XMPP side's own
    /// shutdown, after it, could tell them (a shutdown 6 s late in a CI run). Telling a
    /// connection twice is harmless: a closed session ignores the second.
    public func announceShutdown() {
        for channel in tracker.open {
            channel.pipeline.fireUserInboundEventTriggered(ServerShutdownEvent(configuration.shutdown))
        }
    }

    /// Stops accepting, tells every connection `<system-shutdown/>`, waits up to the grace
    /// period for them to close, then closes what is left.
    public func shutdown() async {
        let first = isStopping.withLockedValue { stopping in
            defer { stopping = true }
            return !stopping
        }
        guard first else { return await waitUntilStopped() }
        logger.info("shutting down", metadata: ["connections": "\(tracker.open.count)"])
        for listener in listeners { try? await listener.close() }
        for service in context.router.hosted.all { service.serverStopping() }
        announceShutdown()
        let deadline = ContinuousClock.now + configuration.shutdown.gracePeriod
        while !tracker.open.isEmpty, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        for channel in tracker.open { try? await channel.close() }
        // Sessions waiting for resumption end now; their unacknowledged messages go offline.
        for session in context.resumption.all { session.end(reason: "server shutdown") }
        // Messages accepted for offline accounts are committed before the process may exit.
        await offline.writer.waitUntilIdle(deadline: ContinuousClock.now + .seconds(5))
        await archive.writer.waitUntilIdle(deadline: ContinuousClock.now + .seconds(5))
        // So are the logouts of the sessions the shutdown ended (XEP-0012 last activity).
        await lastActivity.waitUntilIdle(deadline: ContinuousClock.now + .seconds(5))
        for service in context.router.hosted.all { await service.shutdown() }
        // Last: the sessions' ends are written, and the node leaves the cluster's view.
        await cluster?.stop()
        for task in background.withLockedValue({ $0 }) { task.cancel() }
        logger.info("stopped")
        stopped.succeed(())
    }

    public func waitUntilStopped() async {
        try? await stopped.futureResult.get()
    }
}

extension TimeAmount {
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}

extension PEPService.Limits {
    init(_ configuration: ServerConfiguration.PEP) {
        self.init()
        maxItemsPerNode = configuration.maxItemsPerNode
        maxPayloadBytes = configuration.maxPayloadBytes
        maxNodesPerAccount = configuration.maxNodesPerAccount
    }
}

extension ProfileService.Limits {
    init(_ configuration: ServerConfiguration) {
        self.init()
        maxVCardBytes = configuration.vCard.maxBytes
        maxPrivateElementBytes = configuration.privateStorage.maxElementBytes
        maxPrivateElements = configuration.privateStorage.maxElements
    }
}

extension C2SPolicy {
    init(configuration: ServerConfiguration, domain: JID) {
        self.init(domain: domain)
        tlsRequired = configuration.tls.required
        mechanisms = configuration.auth.mechanisms.compactMap { SASLMechanism(rawValue: $0.rawValue) }
        allowPlainWithoutTLS = configuration.auth.allowPlainWithoutTLS
        registrationEnabled = configuration.registration.enabled
        minimumPasswordLength = configuration.registration.minPasswordLength
        scramIterations = configuration.auth.scramIterations
        unauthenticatedTimeout = TimeAmount(configuration.limits.unauthenticatedTimeout)
        stanzasPerSecond = Double(configuration.limits.stanzasPerSecond)
        stanzaBurst = Double(configuration.limits.stanzaBurst)
        onSameResource = configuration.sessions.onSameResource == .reject ? .reject : .replace
        maxSessionsPerAccount = configuration.sessions.maxPerAccount
        singleDevice = configuration.sessions.singleDevice
        clientStateQueueSize = configuration.clientState.queueSize
        if configuration.streamManagement.enabled {
            streamManagement = StreamManagement(
                resumeTimeout: TimeAmount(configuration.streamManagement.resumeTimeout),
                maxUnacked: configuration.streamManagement.maxUnacked)
        }
    }
}
