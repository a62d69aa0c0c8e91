import Foundation
import Logging
import NIOCore
import NIOPosix
import ParleyCore
import ParleyStream
import ParleyTLS

/// An XMPP client: one account's connection to its server, kept up by itself.
///
/// It reconnects after network loss or a server restart (exponential backoff with jitter),
/// keeps what the application sends while disconnected and sends it once connected again,
/// and reports everything on `events`. It does not reconnect after being kicked (another
/// login, account removed, password changed) or after failed authentication: doing so would
/// only fight the other device or hammer the server.
public actor XMPPClient {
    public nonisolated let events: AsyncStream<ClientEvent>
    public let configuration: ClientConfiguration
    /// The full JID of the current session, once connected.
    public private(set) var boundJID: JID?
    /// The stream features the server offered after authentication (roster versioning and
    /// the like), for the current session.
    public private(set) var streamFeatures: XMLElement?
    /// How many established connections have ended other than by `disconnect()`: work tied
    /// to a connection (an upload slot, say) compares it before and after to know it survived.
    public private(set) var connectionsLost = 0

    private let eventSink: AsyncStream<ClientEvent>.Continuation
    private let group: any EventLoopGroup
    let logger: Logger
    private let tls: TLSContext?
    var connection: ClientConnection?
    private var state = State.idle
    var outbox: [XMLElement] = []
    private var pendingRequests: [String: CheckedContinuation<XMLElement, any Error>] = [:]
    private var connectWaiters: [CheckedContinuation<Void, any Error>] = []
    private var reconnectTask: Task<Void, Never>?
    private var attempt = 0
    var stanzaHandlers: [@Sendable (XMLElement) async -> Void] = []
    var establishedHandlers: [@Sendable (JID, Bool) async -> Void] = []
    var acknowledgementHandlers: [@Sendable ([XMLElement]) -> Void] = []
    /// Callers of `waitForAcknowledgements()`, resumed when nothing is unacknowledged.
    var acknowledgementWaiters: [CheckedContinuation<Void, Never>] = []
    /// The XEP-0198 session, kept after its connection drops so the next one can resume it
    /// or at least resend what the server never acknowledged.
    var managed: ManagedSessionState?
    /// `managed` belongs to the current connection (not to one that dropped).
    var managedIsLive = false
    /// The current connection resumed its session and no `<a/>` has come back on it since.
    var resumedWithoutAcknowledgement = false
    /// Ends a connection whose server leaves our `<r/>` unanswered (see `watchAcknowledgement`).
    var acknowledgementWatch: Task<Void, Never>?
    private var nextID = 0
    /// The presence sent when a new session starts (see `setInitialPresence`).
    private var initialPresence = XMLElement("presence", namespace: XMLNamespace.client)
    /// XEP-0352: what the application last said (nil: never said, so the server's default).
    var clientState: Bool?
    /// Which connection is current: callbacks of an older one (closed by `disconnect()` or
    /// replaced by a reconnect) are ignored instead of ending the new one.
    private var generation = 0
    /// Where the server last sent the client (see-other-host, see-other-uri): tried first by
    /// each connection until it fails, then forgotten.
    var redirect: ClientConfiguration?
    /// Redirects followed since the last established session: a loop ends after a few.
    var redirectsInARow = 0
    /// The candidate the current connection went to (a discovered WebSocket, an SRV target).
    var connectedVia: ClientConfiguration?
    /// What the connection's event loop reports, in the order it happened. One task consumes
    /// it, so stanzas reach the handlers in the order the server sent them (a `Task` per
    /// stanza would let them overtake each other on the global executor).
    private let inbound: AsyncStream<Inbound>.Continuation

    private enum Inbound: Sendable {
        case established(generation: Int, jid: JID, features: XMLElement?, start: SessionStart)
        case stanza(generation: Int, XMLElement)
        case acknowledged(generation: Int, h: UInt32)
        case closed(generation: Int, ConnectionEnd)
    }

    private enum State {
        case idle, connecting, connected, waitingToReconnect, stopped
    }

    public init(configuration: ClientConfiguration, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, logger: Logger = Logger(label: "parley.client")) throws {
        self.configuration = configuration
        self.group = group
        self.logger = logger
        (events, eventSink) = AsyncStream.makeStream(of: ClientEvent.self, bufferingPolicy: .unbounded)
        if configuration.webSocket != nil {
            // `wss://` is HTTPS before it is a WebSocket.
            tls = try TLSContext(client: TLSClientConfiguration(trust: configuration.trust, alpnProtocols: ["http/1.1"]))
        } else {
            tls = configuration.security == .none ? nil : try TLSContext(client: TLSClientConfiguration(trust: configuration.trust, alpnProtocols: configuration.security == .directTLS ? ["xmpp-client"] : []))
        }
        let (stream, continuation) = AsyncStream.makeStream(of: Inbound.self, bufferingPolicy: .unbounded)
        inbound = continuation
        // Ends when `deinit` finishes the stream.
        Task { [weak self] in
            for await item in stream {
                guard let self else { return }
                await self.process(item)
            }
        }
    }

    deinit {
        inbound.finish()
    }

    private func process(_ item: Inbound) async {
        switch item {
        case .established(let generation, let jid, let features, let start):
            guard generation == self.generation else { return }
            established(jid, features: features, start: start)
        case .stanza(let generation, let stanza):
            guard generation == self.generation else { return }
            await received(stanza)
        case .acknowledged(let generation, let h):
            guard generation == self.generation else { return }
            await acknowledged(h)
        case .closed(let generation, let end):
            guard generation == self.generation else { return }
            connectionEnded(end)
        }
    }

    // MARK: Connecting

    /// Connects and returns once the session is bound, or throws why it could not be. After
    /// that, the client stays connected by itself until `disconnect()` or a kick.
    public func connect() async throws {
        switch state {
        case .connected: return
        case .connecting, .waitingToReconnect:
            return try await withCheckedThrowingContinuation { connectWaiters.append($0) }
        case .idle, .stopped:
            attempt = 0
            try await withCheckedThrowingContinuation { continuation in
                connectWaiters.append(continuation)
                startConnecting()
            }
        }
    }

    /// Ends the session politely and returns once the connection is closed (at most about a
    /// second), so that a process may exit right after without cutting off what it sent.
    public func disconnect() async {
        state = .stopped
        reconnectTask?.cancel()
        reconnectTask = nil
        let closing = connection
        connection = nil
        // A closing stream is handled in full by the server (XEP-0198 §4): nothing to resume.
        managed = nil
        managedIsLive = false
        resumeAcknowledgementWaiters()
        boundJID = nil
        streamFeatures = nil
        generation += 1
        failPendingRequests(ClientError.disconnected)
        resumeConnectWaiters(with: ClientError.disconnected)
        eventSink.yield(.disconnected(.requested))
        await closing?.closeGracefully()
    }

    private func startConnecting() {
        state = .connecting
        eventSink.yield(.connecting)
        Task { await openConnection() }
    }

    private func openConnection() async {
        generation += 1
        let current = generation
        let inbound = self.inbound
        var lastError: (any Error)? = nil
        var tried: [String] = []
        let resumption = managed.flatMap { session in
            session.resumptionID.map { ResumptionRequest(previd: $0, jid: session.jid, counter: session.counter) }
        }
        let candidates: [ClientConfiguration]
        do {
            candidates = (redirect.map { [$0] } ?? []) + (try await Self.candidates(for: configuration))
        } catch {
            guard generation == current else { return }
            return connectionEnded(.connectionLost(describe(error)))
        }
        let redirected = redirect != nil
        for (index, candidate) in candidates.enumerated() {
            guard generation == current, state != .stopped else { return }
            tried.append("\(candidate.serverHost):\(candidate.serverPort)")
            do {
                let connection = try await ClientConnection.open(configuration: candidate, tls: tls, group: group, resumption: resumption) {
                    ClientStreamHandler.Callbacks(
                        onEstablished: { jid, features, start in
                            inbound.yield(.established(generation: current, jid: jid, features: features, start: start))
                        },
                        onStanza: { stanza in inbound.yield(.stanza(generation: current, stanza)) },
                        onClosed: { end in inbound.yield(.closed(generation: current, end)) },
                        onAcknowledged: { h in inbound.yield(.acknowledged(generation: current, h: h)) })
                }
                if state == .stopped || generation != current {
                    connection.close()
                    return
                }
                self.connection = connection
                connectedVia = candidate
                return
            } catch {
                lastError = error
                if redirected, index == 0 { redirect = nil }
            }
        }
        guard generation == current else { return }
        if let error = lastError as? TLSError, let untrusted = error.untrustedCertificateReason {
            return connectionEnded(.certificateUntrusted(untrusted))
        }
        let reason = lastError.map { describe($0) } ?? "no address to try"
        connectionEnded(.connectionLost("cannot connect to \(tried.joined(separator: ", ")): \(reason)"))
    }

    private func established(_ jid: JID, features: XMLElement?, start: SessionStart) {
        guard state == .connecting else { return }
        state = .connected
        attempt = 0
        redirectsInARow = 0
        boundJID = jid
        streamFeatures = features
        let resumed: Bool
        switch start {
        case .resumed(let h, _):
            // The same session on a new connection: what the server had not handled yet is
            // sent again, in order, and stays unacknowledged until it is.
            resumed = true
            managedIsLive = true
            resumedWithoutAcknowledgement = true
            managed?.acknowledgementRequested = false
            if let handled = acknowledge(h) { notifyAcknowledged(handled) }
            eventSink.yield(.resumed(jid: jid))
            for stanza in managed?.unacknowledged ?? [] { connection?.send(stanza) }
            if managed?.unacknowledged.isEmpty == false { requestAcknowledgement() }
        case .bound(let management, let failed):
            resumed = false
            resumedWithoutAcknowledgement = false
            // A new session: of what the old one sent and never had acknowledged, the
            // messages go again (the receiving side drops any it already has, by origin id);
            // requests and presence belong to the old session.
            var previous = managed
            if let h = failed?.h, let handled = try? previous?.acknowledge(h) { notifyAcknowledged(handled) }
            let resend = previous?.unacknowledged.filter { $0.name == "message" } ?? []
            managed = management.map { ManagedSessionState(resumptionID: $0.resumptionID, jid: jid, counter: $0.counter) }
            managedIsLive = managed != nil
            eventSink.yield(.connected(jid: jid))
            if configuration.sendsInitialPresence {
                transmit(initialPresence)
            }
            for stanza in resend { transmit(stanza) }
        }
        // XEP-0352 §5: a server need not keep the state across sessions (nor resumptions).
        if let clientState { sendClientState(clientState) }
        // What the application sent while we were away goes out now, in order.
        let queued = outbox
        outbox = []
        for stanza in queued { transmit(stanza) }
        resumeConnectWaiters(with: nil)
        // Not awaited: a handler typically asks the server something (the roster), and the
        // answer arrives through the inbound queue this call is running on.
        for handler in establishedHandlers { Task { await handler(jid, resumed) } }
    }

    private func connectionEnded(_ end: ConnectionEnd) {
        guard state == .connecting || state == .connected else { return }
        if state == .connected { connectionsLost += 1 }
        connection = nil
        managedIsLive = false
        acknowledgementWatch?.cancel()
        resumeAcknowledgementWaiters()
        boundJID = nil
        streamFeatures = nil
        failPendingRequests(ClientError.disconnected)
        switch end {
        case .streamError(let error):
            if let kick = Self.kickReason(for: error) {
                state = .stopped
                managed = nil
                eventSink.yield(.kicked(kick))
                resumeConnectWaiters(with: ClientError.kicked(kick))
                return
            }
            scheduleReconnect(after: error.condition == .systemShutdown ? .serverShutdown : .connectionLost(error.description))
        case .authenticationFailed(let reason):
            state = .stopped
            eventSink.yield(.disconnected(.authenticationFailed(reason)))
            resumeConnectWaiters(with: ClientError.authenticationFailed(reason))
        case .certificateUntrusted(let reason):
            state = .stopped
            eventSink.yield(.disconnected(.certificateUntrusted(reason)))
            resumeConnectWaiters(with: ClientError.certificateUntrusted(reason))
        case .connectionLost(let reason):
            scheduleReconnect(after: .connectionLost(reason))
        case .serverSilent:
            abandonUnresponsiveResumedSession()
            scheduleReconnect(after: .connectionLost(ConnectionEnd.silenceDescription))
        case .redirected(let target):
            followRedirect(to: target)
        case .registered, .registrationRefused:
            // Only registration connections end this way (see `registerAccount`).
            state = .stopped
            resumeConnectWaiters(with: ClientError.disconnected)
        }
    }

    func scheduleReconnect(after reason: DisconnectReason) {
        eventSink.yield(.disconnected(reason))
        guard configuration.reconnect.enabled else {
            state = .stopped
            if case .connectionLost(let detail) = reason {
                resumeConnectWaiters(with: ClientError.connectionFailed(detail))
            } else {
                resumeConnectWaiters(with: ClientError.connectionFailed(reason.description))
            }
            return
        }
        attempt += 1
        let delay = ReconnectBackoff.delay(attempt: attempt, policy: configuration.reconnect)
        state = .waitingToReconnect
        eventSink.yield(.reconnecting(attempt: attempt, delay: delay))
        reconnectTask = Task { [weak self] in
            try? await Task.sleep(for: delay)
            guard !Task.isCancelled else { return }
            await self?.reconnectNow()
        }
    }

    private func reconnectNow() {
        guard state == .waitingToReconnect else { return }
        startConnecting()
    }

    private func resumeConnectWaiters(with error: (any Error)?) {
        let waiters = connectWaiters
        connectWaiters = []
        for waiter in waiters {
            if let error { waiter.resume(throwing: error) } else { waiter.resume() }
        }
    }

    // MARK: Sending

    /// Sends a stanza now, or as soon as the client is connected again.
    public func send(_ stanza: XMLElement) {
        var stanza = stanza
        if stanza.namespace == nil { stanza.namespace = XMLNamespace.client }
        if state == .connected {
            transmit(stanza)
        } else {
            outbox.append(stanza)
        }
    }

    /// The presence that starts each new session (when `sendsInitialPresence`): a layer
    /// above sets its status, priority and capabilities here so the first presence contacts
    /// see is already the right one.
    public func setInitialPresence(_ presence: XMLElement) {
        var presence = presence
        presence.namespace = XMLNamespace.client
        initialPresence = presence
    }

    /// Asks the server for a pong (XEP-0199). The server answers in order, so once this
    /// returns, everything sent before it has been processed.
    public func ping(timeout: Duration = .seconds(30)) async throws {
        var ping = XMLElement("iq", namespace: XMLNamespace.client, ["type": "get", "to": configuration.jid.domainpart])
        ping.append(XMLElement("ping", namespace: XMLNamespace.ping))
        _ = try await request(ping, timeout: timeout)
    }

    /// Sends an iq get or set and returns the result; a type='error' answer throws its
    /// `StanzaError`.
    public func request(_ iq: XMLElement, timeout: Duration = .seconds(30)) async throws -> XMLElement {
        guard state == .connected, connection != nil else { throw ClientError.disconnected }
        var iq = iq
        if iq.namespace == nil { iq.namespace = XMLNamespace.client }
        let id = iq.id ?? makeID()
        iq.id = id
        let sent = iq
        let timeoutTask = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            await self?.expire(id)
        }
        defer { timeoutTask.cancel() }
        return try await withCheckedThrowingContinuation { continuation in
            pendingRequests[id] = continuation
            transmit(sent)
        }
    }

    private func expire(_ id: String) {
        pendingRequests.removeValue(forKey: id)?.resume(throwing: ClientError.timeout)
    }

    private func failPendingRequests(_ error: ClientError) {
        let pending = pendingRequests
        pendingRequests = [:]
        for continuation in pending.values { continuation.resume(throwing: error) }
    }

    public func makeID() -> String {
        nextID += 1
        return "parley-\(nextID)-\(UInt32.random(in: .min ... .max))"
    }

    // MARK: Receiving

    /// Reports an event to the application (for layers built on the client).
    public func emit(_ event: ClientEvent) {
        eventSink.yield(event)
    }

    private func received(_ stanza: XMLElement) async {
        if stanza.name == "iq", stanza.type == "result" || stanza.type == "error", let id = stanza.id,
            let continuation = pendingRequests.removeValue(forKey: id)
        {
            if stanza.type == "error" {
                continuation.resume(throwing: StanzaError(stanza: stanza) ?? StanzaError(.undefinedCondition))
            } else {
                continuation.resume(returning: stanza)
            }
            return
        }
        if stanza.name == "iq", stanza.type == "get" || stanza.type == "set",
            stanza.firstChild("ping", namespace: XMLNamespace.ping) != nil
        {
            return send(stanza.iqResult())
        }
        for handler in stanzaHandlers { await handler(stanza) }
    }

    nonisolated func describe(_ error: any Error) -> String { Self.describe(error) }
}
