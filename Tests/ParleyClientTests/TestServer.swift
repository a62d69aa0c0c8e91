import Foundation
import Logging
import ParleyClient
import ParleyCore
import ParleyMUC
import ParleyServer
import ParleyStorage
import ParleyTLS
import Synchronization

/// A real parleyd on 127.0.0.1 with its own data directory, for scenario tests.
struct TestServer {
    var running: RunningServer
    let directory: String

    static let password = "correct horse battery"

    static func start(
        singleDevice: Bool = false, resumeTimeout: Duration = .seconds(300), directory: String? = nil, port: Int = 0,
        configure: (inout ServerConfiguration) -> Void = { _ in }
    ) async throws -> TestServer {
        let directory = directory ?? NSTemporaryDirectory() + "parley-client-tests-" + UUID().uuidString
        var configuration = ServerConfiguration()
        configuration.dataDirectory = directory
        configuration.c2s.port = port
        configuration.c2s.directTLSPort = 0
        configuration.registration.enabled = true
        configuration.sessions.singleDevice = singleDevice
        configuration.shutdown.gracePeriod = .seconds(2)
        configuration.streamManagement.resumeTimeout = resumeTimeout
        configure(&configuration)
        let running = try await RunningServer.start(
            configuration: configuration, logger: quietLogger("parleyd"), hostedServices: hostedServices(configuration))
        return TestServer(running: running, directory: directory)
    }

    /// A server on a port below the kernel's ephemeral range (32768 on): a test that stops
    /// it and starts another on the same port must not find that port taken meanwhile by the
    /// local end of some other test's connection, as a port the kernel handed out can be.
    static func startOnFixedPort(singleDevice: Bool = false, resumeTimeout: Duration = .seconds(300)) async throws -> TestServer {
        var attempt = 0
        while true {
            do {
                return try await start(singleDevice: singleDevice, resumeTimeout: resumeTimeout, port: Int.random(in: 20_000..<32_000))
            } catch where attempt < 20 {
                attempt += 1  // another test's fixed port: draw again
            }
        }
    }

    /// Stops this server and starts a new one on the same port and data directory, as a
    /// restart of the process would.
    mutating func restart() async throws {
        var configuration = running.configuration
        configuration.c2s.port = running.c2sPort
        await running.shutdown()
        running = try await RunningServer.start(
            configuration: configuration, logger: quietLogger("parleyd"), hostedServices: Self.hostedServices(configuration))
    }

    /// The MUC service at conference.localhost, as parleyd starts it.
    static func hostedServices(_ configuration: ServerConfiguration) -> [any HostedService] {
        guard configuration.muc.enabled else { return [] }
        let settings = MUCService.Settings(domain: configuration.mucDomain, serverDomain: configuration.domain, creators: nil)
        return [MUCService(settings: settings, logger: quietLogger("parleyd.muc"))]
    }

    func createAccount(_ username: String, password: String = TestServer.password) async throws {
        try await running.storage.createAccount(username: username, keys: AccountKeys.derive(password: password, iterations: 4096))
    }

    func configuration(for username: String, password: String = TestServer.password, resource: String? = nil) throws -> ClientConfiguration {
        var configuration = ClientConfiguration(jid: try JID("\(username)@localhost"), password: password)
        configuration.host = "127.0.0.1"
        configuration.port = running.c2sPort
        configuration.trust = .pinned(.sha256Fingerprint(running.certificateFingerprint!))
        configuration.resource = resource
        configuration.reconnect.initialDelay = .milliseconds(200)
        configuration.reconnect.maximumDelay = .seconds(1)
        return configuration
    }

    /// Two new accounts, each with a fresh client that is signed in: how most scenarios begin.
    func signedInPair(_ first: String, _ second: String) async throws -> ((ChatClient, EventRecorder), (ChatClient, EventRecorder)) {
        try await createAccount(first)
        try await createAccount(second)
        let one = try client(first)
        let two = try client(second)
        try await one.0.connect()
        try await two.0.connect()
        return (one, two)
    }

    /// A client for `username` with a fresh cache, and a recorder of its events.
    func client(_ username: String, resource: String? = nil, cachePath: String? = nil) throws -> (ChatClient, EventRecorder) {
        let client = try ChatClient(
            configuration: configuration(for: username, resource: resource),
            cachePath: cachePath ?? directory + "/clients/\(username)-\(UUID().uuidString).sqlite", logger: quietLogger("client.\(username)"))
        return (client, EventRecorder(client.events))
    }

    func stop() async {
        await running.shutdown()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

func quietLogger(_ label: String) -> Logger {
    var logger = Logger(label: label)
    logger.logLevel = .warning
    return logger
}

struct TimedOut: Error, CustomStringConvertible {
    var description: String
}

/// Keeps every event a client reports, so a test can wait for the next one it cares about.
final class EventRecorder: Sendable {
    private let state = Mutex(State())

    private struct State {
        var events: [ClientEvent] = []
        var cursor = 0
    }

    init(_ events: AsyncStream<ClientEvent>) {
        Task { [self] in
            for await event in events { state.withLock { $0.events.append(event) } }
        }
    }

    var all: [ClientEvent] { state.withLock { $0.events } }

    /// The first event after the previous match that `matches`, waiting up to `timeout`.
    @discardableResult
    func next(
        within timeout: Duration = .seconds(10), _ what: String = "event",
        where matches: @Sendable (ClientEvent) -> Bool
    ) async throws -> ClientEvent {
        let deadline = ContinuousClock.now + timeout
        while true {
            let found: ClientEvent? = state.withLock { state in
                guard let index = state.events[state.cursor...].firstIndex(where: matches) else { return nil }
                state.cursor = index + 1
                return state.events[index]
            }
            if let found { return found }
            guard ContinuousClock.now < deadline else {
                throw TimedOut(description: "no \(what) within \(timeout); saw \(all)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}

/// Polls `condition` until it holds or `timeout` passes.
func eventually(
    within timeout: Duration = .seconds(10), _ what: String, _ condition: @Sendable () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw TimedOut(description: "\(what) did not happen within \(timeout)") }
        try await Task.sleep(for: .milliseconds(20))
    }
}

/// Runs `body` with a fresh server, and stops it afterwards whatever happened.
func withServer(
    singleDevice: Bool = false, resumeTimeout: Duration = .seconds(300), fixedPort: Bool = false,
    _ body: (inout TestServer) async throws -> Void
) async throws {
    var server =
        fixedPort
        ? try await TestServer.startOnFixedPort(singleDevice: singleDevice, resumeTimeout: resumeTimeout)
        : try await TestServer.start(singleDevice: singleDevice, resumeTimeout: resumeTimeout)
    do {
        try await body(&server)
    } catch {
        await server.stop()
        throw error
    }
    await server.stop()
}
