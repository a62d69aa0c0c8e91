import ArgumentParser
import Foundation
import Logging
import ParleyClient
import ParleyCore
import ParleyTLS

/// Options every command that signs in shares.
struct AccountOptions: ParsableArguments {
    @Option(help: "The account config file (default ~/.config/parley/config.json).")
    var config: String?

    @Option(help: "The account's address, e.g. alice@example.org (overrides the config).")
    var jid: String?

    @Option(help: "Connect to this host instead of the JID's domain.")
    var host: String?

    @Option(help: "Connect to this port (default 5222, or 5223 with --direct-tls).")
    var port: Int?

    @Option(help: "Trust the server certificate with this SHA-256 fingerprint (for self-signed servers).")
    var trustFingerprint: String?

    @Option(name: .customLong("trust-http-certificate"), help: "For HTTPS file transfers, also trust this PEM certificate or CA file (a self-signed upload server).")
    var trustHTTPCertificate: String?

    @Flag(help: "TLS from the first byte (XEP-0368) instead of STARTTLS.")
    var directTLS = false

    @Option(
        name: .customLong("websocket"),
        help: ArgumentHelp(
            "Connect over XMPP-over-WebSocket (RFC 7395): a wss:// URL, or 'auto' to find the domain's endpoint through XEP-0156 host-meta.",
            valueName: "url|auto"))
    var webSocket: String?

    @Flag(help: "Log protocol details to stderr.")
    var verbose = false

    /// The client configuration, the cache path, and the account.
    func resolve(reconnect: Bool) throws -> (ClientConfiguration, cachePath: String) {
        let (file, isPrivate) = try AccountConfig.load(path: config)
        guard let address = jid ?? file.jid else {
            throw CLIError("no account: pass --jid or put \"jid\" in \(config ?? AccountConfig.defaultPath)", .usage)
        }
        let account: JID
        do {
            account = try JID(address)
        } catch {
            throw CLIError("'\(address)' is not a valid JID: \(error)", .usage)
        }
        guard account.localpart != nil else { throw CLIError("'\(address)' has no user part (user@domain)", .usage) }
        let password = try AccountConfig.password(
            from: file, isPrivate: isPrivate, configPath: config ?? AccountConfig.defaultPath, prompt: "Password for \(account.bare): ")
        var configuration = ClientConfiguration(jid: account, password: password)
        configuration.host = host ?? file.host
        configuration.port = port ?? file.port
        configuration.security = directTLS || file.directTLS == true ? .directTLS : .startTLS
        if let choice = webSocket ?? file.webSocket {
            configuration.webSocket = try Self.webSocket(choice)
        }
        if let fingerprint = trustFingerprint ?? file.trustedFingerprint {
            configuration.trust = .pinned(.sha256Fingerprint(fingerprint))
        }
        configuration.httpTrustedCertificateFile = trustHTTPCertificate ?? file.httpTrustedCertificate
        configuration.reconnect.enabled = reconnect
        return (configuration, file.cache ?? AccountConfig.defaultCachePath(for: account))
    }

    /// `auto` or a `ws(s)://` URL.
    static func webSocket(_ choice: String) throws -> ClientConfiguration.WebSocket {
        if choice.lowercased() == "auto" { return .discover }
        guard let url = WebSocketURL(choice) else {
            throw CLIError("'\(choice)' is not a WebSocket URL (wss://host[:port]/path) or 'auto'", .usage)
        }
        return .endpoint(url)
    }

    var logger: Logger {
        var logger = Logger(label: "parley", factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = verbose ? .debug : .critical
        return logger
    }

    /// Signs in for a one-shot command, runs `body`, makes sure the server has processed what
    /// it sent, and signs out.
    ///
    /// Unless `online`, the session sends no presence: it is not "online" for contacts, and
    /// messages to the account wait in offline storage for a real session instead of coming
    /// to one that is about to go.
    func withClient<T>(online: Bool = false, priority: Int8 = 0, _ body: (ChatClient) async throws -> T) async throws -> T {
        var (configuration, cachePath) = try resolve(reconnect: false)
        configuration.sendsInitialPresence = online
        configuration.initialPriority = priority
        do {
            let client = try ChatClient(configuration: configuration, cachePath: cachePath, logger: logger)
            try await client.connect()
            let result = try await body(client)
            try await client.settle()
            await client.disconnect()
            return result
        } catch {
            throw CLIError(error, account: configuration.jid)
        }
    }
}

/// Parses a JID argument, or fails as a usage error.
func parseJID(_ text: String) throws -> JID {
    do {
        return try JID(text)
    } catch {
        throw CLIError("'\(text)' is not a valid JID: \(error)", .usage)
    }
}
