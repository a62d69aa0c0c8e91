import Foundation
import Synchronization
import Logging
import NIOCore
import NIOPosix
import ParleyCore
@testable import ParleyServer
import ParleyStorage

/// A real server on 127.0.0.1 with system-picked ports, a fresh data directory and a few
/// accounts, for scenario tests. Every test starts its own, so no state leaks between tests.
final class TestServer: Sendable {
    static let domain = "localhost"
    /// Accounts every scenario may log in with.
    static let defaultAccounts = ["alice": "alice-password", "bob": "bob-password"]
    /// For scenarios with a third party; pass it as `accounts:`.
    static let threeAccounts = defaultAccounts.merging(["carol": "carol-password"]) { $1 }

    /// The server now running; `restart()` replaces it.
    var running: RunningServer { current.withLock { $0 } }
    let directory: String
    private let current: Mutex<RunningServer>
    private let logger: Logger
    /// Hosted services the server was started with (kept across restarts).
    let hostedServices: [any HostedService]
    /// The stores it was started with, when not its own SQLite file (kept across restarts).
    let storage: (any ServerStorage)?

    var c2sPort: Int { running.c2sPort }
    var directTLSPort: Int { running.directTLSPort }
    var fingerprint: String { running.certificateFingerprint ?? "" }
    var configuration: ServerConfiguration { running.configuration }

    private init(
        running: RunningServer, directory: String, logger: Logger, hostedServices: [any HostedService], storage: (any ServerStorage)?
    ) {
        self.hostedServices = hostedServices
        self.storage = storage
        self.current = Mutex(running)
        self.directory = directory
        self.logger = logger
    }

    /// The configuration scenarios start from: loopback, ephemeral ports, the cheapest SCRAM
    /// iteration count RFC 7677 allows, and keepalives out of the way unless a test wants them.
    static func baseConfiguration(directory: String) -> ServerConfiguration {
        var configuration = ServerConfiguration()
        configuration.domain = domain
        configuration.dataDirectory = directory
        configuration.c2s.interfaces = ["127.0.0.1"]
        configuration.c2s.port = 0
        configuration.c2s.directTLSPort = ServerConfiguration.C2S.anyFreePort
        configuration.auth.scramIterations = 4096
        configuration.keepalive.whitespaceInterval = nil
        configuration.keepalive.pingAfter = nil
        configuration.keepalive.idleTimeout = .seconds(60)
        configuration.shutdown.gracePeriod = .seconds(2)
        return configuration
    }

    static func start(
        accounts: [String: String] = defaultAccounts, hostedServices: [any HostedService] = [],
        storage: (any ServerStorage)? = nil, cluster: (any ClusterMember)? = nil,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        _ configure: (inout ServerConfiguration) -> Void = { _ in }
    ) async throws -> TestServer {
        let directory = NSTemporaryDirectory() + "parley-scenario-" + UUID().uuidString
        var configuration = baseConfiguration(directory: directory)
        configure(&configuration)
        var logger = Logger(label: "parley.scenario")
        logger.logLevel = ProcessInfo.processInfo.environment["PARLEY_TEST_LOG"] != nil ? .debug : .critical
        let running = try await RunningServer.start(
            configuration: configuration, logger: logger, group: group, hostedServices: hostedServices, storage: storage, cluster: cluster)
        let server = TestServer(running: running, directory: directory, logger: logger, hostedServices: hostedServices, storage: storage)
        for (username, password) in accounts {
            try await server.createAccount(username, password: password)
        }
        return server
    }

    func createAccount(_ username: String, password: String) async throws {
        let keys = try AccountKeys.derive(password: password, iterations: configuration.auth.scramIterations)
        try await running.storage.createAccount(username: username, keys: keys)
    }

    /// Shuts the server down and starts a new one on the same data directory and ports, as
    /// an operator restarting it would; clients must connect again (at `c2sPort`).
    func restart() async throws {
        let old = running
        await old.shutdown()
        var configuration = old.configuration
        configuration.c2s.port = old.c2sPort
        configuration.c2s.directTLSPort = old.directTLSPort
        let new: RunningServer
        do {
            new = try await RunningServer.start(configuration: configuration, logger: logger, hostedServices: hostedServices, storage: storage)
        } catch let error as IOError where error.errnoCode == EADDRINUSE {
            // The old ports were ephemeral ones: while the server was down, another test's
            // outgoing connection may have taken one as its source port. The data directory,
            // not the port, is what a restart must keep.
            configuration.c2s.port = 0
            configuration.c2s.directTLSPort = old.directTLSPort == 0 ? 0 : ServerConfiguration.C2S.anyFreePort
            new = try await RunningServer.start(configuration: configuration, logger: logger, hostedServices: hostedServices, storage: storage)
        }
        current.withLock { $0 = new }
    }

    /// Stops the server (if the test did not) and removes its data directory.
    func stop() async {
        await running.shutdown()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Starts a server, runs `body`, and always stops it.
    static func with<T>(
        accounts: [String: String] = defaultAccounts, hostedServices: [any HostedService] = [],
        storage: (any ServerStorage)? = nil, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        _ configure: (inout ServerConfiguration) -> Void = { _ in },
        _ body: (TestServer) async throws -> T
    ) async throws -> T {
        let server = try await start(accounts: accounts, hostedServices: hostedServices, storage: storage, group: group, configure)
        do {
            let result = try await body(server)
            await server.stop()
            return result
        } catch {
            await server.stop()
            throw error
        }
    }

    // MARK: Clients

    /// A plain TCP connection to the STARTTLS port; nothing sent yet.
    func connect() async throws -> TestClient {
        try await TestClient.connect(port: c2sPort, fingerprint: fingerprint)
    }

    /// A connection to the direct TLS port (XEP-0368), handshake done, nothing sent yet.
    func connectDirectTLS(alpn: [String] = ["xmpp-client"]) async throws -> TestClient {
        try await TestClient.connect(port: directTLSPort, fingerprint: fingerprint, directTLS: alpn)
    }

    /// A client that went all the way: STARTTLS, SCRAM-SHA-256, bind.
    func login(_ username: String, password: String? = nil, resource: String? = nil) async throws -> TestClient {
        let client = try await connect()
        try await client.login(username, password: password ?? Self.threeAccounts[username] ?? "", resource: resource)
        return client
    }
}
