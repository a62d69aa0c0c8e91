import Configuration
import Foundation
import ParleyCore
import SystemPackage

extension ServerConfiguration {
    /// Reads the configuration from an optional YAML file, with `PARLEYD_*` environment
    /// variables taking precedence over it (`PARLEYD_C2S_PORT=5300` sets `c2s.port`; lists
    /// are comma-separated). Anything not given keeps its default.
    ///
    /// Refuses, rather than guesses about: a file that was named but is missing, unknown
    /// keys and `PARLEYD_*` variables (with a suggestion for likely typos), values of the
    /// wrong type or out of range, and contradictory settings. The error names the key.
    ///
    /// `async` only because swift-configuration's `FileProvider` reads the file that way.
    public static func load(file: String?, environment: [String: String]) async throws(ConfigurationError)
        -> ServerConfiguration
    {
        let ours = try optionVariables(in: environment)
        var providers: [any ConfigProvider] = [
            EnvironmentVariablesProvider(environmentVariables: ours).prefixKeys(with: ConfigKey("parleyd"))
        ]
        if let file, try validateFile(file) {
            do {
                providers.append(try await FileProvider<YAMLSnapshot>(filePath: FilePath(file)))
            } catch {
                throw ConfigurationError(key: file, reason: "cannot read: \(error)")
            }
        }
        let values = ConfigurationValues(reader: ConfigReader(providers: providers), environment: ours)
        return try read(values)
    }

    /// The `PARLEYD_*` variables that name options, keys upper-cased as the environment
    /// provider compares them; any other `PARLEYD_*` variable is most likely a typo.
    private static func optionVariables(in environment: [String: String]) throws(ConfigurationError)
        -> [String: String]
    {
        var result: [String: String] = [:]
        for (name, value) in environment.sorted(by: { $0.key < $1.key }) {
            let upper = name.uppercased()
            guard upper.hasPrefix(ConfigurationSchema.environmentPrefix),
                !ConfigurationSchema.environmentVariablesNotOptions.contains(upper)
            else { continue }
            guard ConfigurationSchema.optionsByEnvironmentVariable[upper] != nil else {
                let hint = ConfigurationSchema.suggestion(
                    for: upper, among: ConfigurationSchema.optionsByEnvironmentVariable.keys
                ).map { " (did you mean \($0)?)" } ?? ""
                throw ConfigurationError(key: name, reason: "unknown environment variable\(hint)")
            }
            result[upper] = value
        }
        return result
    }

    /// Returns false for a file without any options (empty or all comments).
    private static func validateFile(_ file: String) throws(ConfigurationError) -> Bool {
        guard let data = FileManager.default.contents(atPath: file) else {
            let reason = FileManager.default.fileExists(atPath: file) ? "cannot be read" : "no such file"
            throw ConfigurationError(key: file, reason: reason)
        }
        guard let yaml = String(data: data, encoding: .utf8) else {
            throw ConfigurationError(key: file, reason: "not UTF-8 text")
        }
        return try ConfigurationFileValidator.validate(yaml: yaml, file: file)
    }

    private static func read(_ values: ConfigurationValues) throws(ConfigurationError) -> ServerConfiguration {
        var config = ServerConfiguration()
        let rawDomain = try values.string("domain", default: config.domain)
        do {
            let jid = try JID(domainpart: rawDomain)
            config.domain = jid.domainpart
        } catch {
            throw values.error("domain", "not a valid XMPP domain: \(error)")
        }
        config.dataDirectory = try values.string("data_dir", default: config.dataDirectory)
        config.logLevel = try values.choice("log_level", default: config.logLevel)

        config.c2s.interfaces = try values.stringList("c2s.interfaces", default: config.c2s.interfaces)
        config.c2s.port = try values.port("c2s.port", default: config.c2s.port, zeroMeans: "any free port")
        config.c2s.directTLSPort = try values.port(
            "c2s.direct_tls_port", default: config.c2s.directTLSPort, zeroMeans: "disabled")
        if config.c2s.port != 0, config.c2s.port == config.c2s.directTLSPort {
            throw values.error("c2s.direct_tls_port", "is the same as c2s.port (\(config.c2s.port))")
        }

        config.tls.certificate = values.optionalString("tls.certificate")
        config.tls.key = values.optionalString("tls.key")
        config.tls.required = try values.bool("tls.required", default: config.tls.required)

        config.auth.mechanisms = try values.choiceList("auth.mechanisms", default: config.auth.mechanisms)
        config.auth.allowPlainWithoutTLS = try values.bool(
            "auth.allow_plain_without_tls", default: config.auth.allowPlainWithoutTLS)
        // RFC 7677 §4 sets the floor; the ceiling stops a typo from making every login a DoS.
        config.auth.scramIterations = try values.int(
            "auth.scram_iterations", default: config.auth.scramIterations, in: 4096...1_000_000,
            expected: "an integer from 4096 to 1000000")

        config.registration.enabled = try values.bool("registration.enabled", default: config.registration.enabled)
        config.registration.minPasswordLength = try values.positiveInt(
            "registration.min_password_length", default: config.registration.minPasswordLength)

        config.roster.maxItems = try values.positiveInt("roster.max_items", default: config.roster.maxItems)
        config.offline.quota = try values.positiveInt("offline.quota", default: config.offline.quota)
        config.archive.enabled = try values.bool("archive.enabled", default: config.archive.enabled)
        config.archive.maxMessagesPerUser = try values.int(
            "archive.max_messages_per_user", default: config.archive.maxMessagesPerUser, in: 0...Int.max,
            expected: "an integer, 0 for unlimited")
        config.archive.retentionDays = try values.int(
            "archive.retention_days", default: config.archive.retentionDays, in: 0...1_000_000,
            expected: "an integer, 0 to keep messages forever")

        config.vCard.maxBytes = try values.positiveInt("vcard.max_bytes", default: config.vCard.maxBytes)
        config.privateStorage.maxElementBytes = try values.positiveInt(
            "private_storage.max_element_bytes", default: config.privateStorage.maxElementBytes)
        config.privateStorage.maxElements = try values.positiveInt(
            "private_storage.max_elements", default: config.privateStorage.maxElements)

        try readLimits(values, into: &config.limits)
        try readKeepalive(values, into: &config.keepalive)

        config.sessions.onSameResource = try values.choice(
            "sessions.on_same_resource", default: config.sessions.onSameResource)
        config.sessions.maxPerAccount = try values.int(
            "sessions.max_per_account", default: config.sessions.maxPerAccount, in: 0...Int.max,
            expected: "an integer, 0 for unlimited")
        config.sessions.singleDevice = try values.bool("sessions.single_device", default: config.sessions.singleDevice)

        config.streamManagement.enabled = try values.bool(
            "stream_management.enabled", default: config.streamManagement.enabled)
        config.streamManagement.resumeTimeout = try values.seconds(
            "stream_management.resume_timeout", default: config.streamManagement.resumeTimeout, allowZero: true)
        config.streamManagement.maxUnacked = try values.positiveInt(
            "stream_management.max_unacked", default: config.streamManagement.maxUnacked)

        config.shutdown.gracePeriod = try values.seconds(
            "shutdown.grace_period", default: config.shutdown.gracePeriod, allowZero: true)
        config.shutdown.redirectHost = try values.redirectHost("shutdown.redirect_host")
        config.shutdown.redirectWebSocketURI = try values.webSocketURI("shutdown.redirect_websocket_uri")
        config.shutdown.redirectBOSHURI = try values.boshURI("shutdown.redirect_bosh_uri")

        config.metrics.enabled = try values.bool("metrics.enabled", default: config.metrics.enabled)
        config.metrics.address = try values.string("metrics.address", default: config.metrics.address)
        config.metrics.port = try values.port("metrics.port", default: config.metrics.port, zeroMeans: "any free port")

        config.storage.backend = try values.choice("storage.backend", default: config.storage.backend)
        config.storage.sqlite.path = values.optionalString("storage.sqlite.path")
        config.storage.url = values.optionalString("storage.url")
        if config.storage.backend == .postgresql, config.storage.url == nil {
            throw values.error("storage.url", "required with storage.backend postgresql (postgres://user@host:port/database)")
        }

        config.pep.enabled = try values.bool("pep.enabled", default: config.pep.enabled)
        config.pep.maxItemsPerNode = try values.positiveInt("pep.max_items_per_node", default: config.pep.maxItemsPerNode)
        config.pep.maxPayloadBytes = try values.positiveInt("pep.max_payload_bytes", default: config.pep.maxPayloadBytes)
        config.pep.maxNodesPerAccount = try values.positiveInt(
            "pep.max_nodes_per_account", default: config.pep.maxNodesPerAccount)
        try readDiscovery(values, into: &config)
        try readHTTP(values, into: &config.http, domain: config.domain)
        try readMUC(values, into: &config)
        try readCluster(values, into: &config)
        return config
    }

    /// XEP-0352, XEP-0157 and XEP-0215 options.
    private static func readDiscovery(_ values: ConfigurationValues, into config: inout ServerConfiguration) throws(ConfigurationError) {
        config.clientState.queueSize = try values.positiveInt("csi.queue_size", default: config.clientState.queueSize)
        var contact = config.contactInfo
        for (key, path) in [
            ("abuse", \ContactInfo.abuse), ("admin", \.admin), ("feedback", \.feedback), ("sales", \.sales),
            ("security", \.security), ("support", \.support),
        ] {
            let addresses = try values.stringList("contact_info.\(key)", default: contact[keyPath: path])
            // XEP-0157 §3 wants URIs; a bare address would be published as is and be useless.
            if let bad = addresses.first(where: { !$0.contains(":") }) {
                throw values.error("contact_info.\(key)", "expected URIs such as mailto:… or xmpp:…, got \"\(bad)\"")
            }
            contact[keyPath: path] = addresses
        }
        config.contactInfo = contact
        config.turn.host = values.optionalString("turn.host")
        config.turn.port = try values.int("turn.port", default: config.turn.port, in: 1...65535, expected: "a port number from 1 to 65535")
        config.turn.secret = values.optionalString("turn.secret")
        config.turn.ttl = try values.seconds("turn.ttl", default: config.turn.ttl)
        config.turn.tcp = try values.bool("turn.tcp", default: config.turn.tcp)
        config.turn.tlsPort = try values.port("turn.tls_port", default: config.turn.tlsPort, zeroMeans: "none")
        if config.turn.host == nil, config.turn.secret != nil {
            throw values.error("turn.secret", "is set but turn.host is not")
        }
    }

    private static func readLimits(_ values: ConfigurationValues, into limits: inout Limits) throws(ConfigurationError) {
        // RFC 6120 §13.12: a server must accept stanzas of at least 10000 bytes.
        limits.maxStanzaBytes = try values.int(
            "limits.max_stanza_bytes", default: limits.maxStanzaBytes, in: 10_000...Int.max,
            expected: "an integer of at least 10000 (RFC 6120 §13.12)")
        limits.maxDepth = try values.positiveInt("limits.max_depth", default: limits.maxDepth)
        limits.connectionsPerIP = try values.positiveInt("limits.connections_per_ip", default: limits.connectionsPerIP)
        limits.maxConnections = try values.positiveInt("limits.max_connections", default: limits.maxConnections)
        limits.unauthenticatedTimeout = try values.seconds(
            "limits.unauthenticated_timeout", default: limits.unauthenticatedTimeout)
        limits.authFailuresPerIP = try values.positiveInt(
            "limits.auth_failures_per_ip", default: limits.authFailuresPerIP)
        limits.authFailureWindow = try values.seconds("limits.auth_failure_window", default: limits.authFailureWindow)
        limits.stanzasPerSecond = try values.positiveInt("limits.stanzas_per_second", default: limits.stanzasPerSecond)
        limits.stanzaBurst = try values.positiveInt("limits.stanza_burst", default: limits.stanzaBurst)
    }

    private static func readKeepalive(_ values: ConfigurationValues, into keepalive: inout Keepalive)
        throws(ConfigurationError)
    {
        func optional(_ duration: Duration) -> Duration? { duration == .zero ? nil : duration }
        keepalive.whitespaceInterval = optional(
            try values.seconds(
                "keepalive.whitespace_interval", default: keepalive.whitespaceInterval ?? .zero, allowZero: true))
        keepalive.pingAfter = optional(
            try values.seconds("keepalive.ping_after", default: keepalive.pingAfter ?? .zero, allowZero: true))
        keepalive.idleTimeout = try values.seconds("keepalive.idle_timeout", default: keepalive.idleTimeout)
        // A ping only helps if its answer can arrive before the connection is given up.
        if let pingAfter = keepalive.pingAfter, pingAfter >= keepalive.idleTimeout {
            throw values.error(
                "keepalive.ping_after", "must be shorter than keepalive.idle_timeout (\(keepalive.idleTimeout))")
        }
    }
}
