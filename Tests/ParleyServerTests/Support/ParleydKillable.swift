import Foundation
import ParleyTestSupport

/// The real `parleyd` executable (built next to the tests) in a process of its own, started
/// from the shipped defaults plus a port and a data directory, so that a test can SIGKILL it
/// at a moment of its choosing (see `FaultInjection`) and look at what its database kept.
/// Driven by one task at a time.
final class ParleydKillable: @unchecked Sendable {
    static let executable: URL? = {
        let url = Bundle.main.executableURL?.deletingLastPathComponent().appendingPathComponent("parleyd")
        return url.flatMap { FileManager.default.isExecutableFile(atPath: $0.path) ? $0 : nil }
    }()

    let directory: String
    let port: Int
    private var process: ChildProcess?

    var configPath: String { directory + "/parleyd.yaml" }
    var databasePath: String { directory + "/data/parley.sqlite" }

    init() throws {
        directory = NSTemporaryDirectory() + "parleyd-killable-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        port = try LoopbackPort.unusedBelowEphemeralRange()
        // Archive and stream management as shipped (both on by default); only what would
        // clash with other tests differs.
        let config = """
            domain: localhost
            data_dir: \(directory)/data
            log_level: warning
            c2s:
              interfaces: [127.0.0.1]
              port: \(port)
              direct_tls_port: 0
            shutdown:
              grace_period: 1
            """
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
    }

    deinit {
        kill()
        try? FileManager.default.removeItem(atPath: directory)
    }

    func addUser(_ username: String, password: String) throws {
        let command = try command(["adduser", "--config", configPath, username], environment: ["PARLEYD_PASSWORD": password])
        guard let status = command.waitForExit(blockingFor: .seconds(30)) else {
            command.stop(grace: .zero)
            throw ScenarioFailure("parleyd adduser did not finish within 30 s")
        }
        guard status == 0 else { throw ScenarioFailure("parleyd adduser exited with wait status \(status)") }
    }

    /// Starts the server and returns once it accepts connections.
    func start(environment: [String: String] = [:]) async throws {
        let process = try command(["run", "--config", configPath], environment: environment)
        self.process = process
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if let status = process.status { throw ScenarioFailure("parleyd exited with wait status \(status) on start") }
            if LoopbackPort.accepts(port) { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw ScenarioFailure("parleyd did not listen on \(port) within 30 s")
    }

    /// SIGKILL: nothing is flushed, committed or closed.
    func kill() {
        process?.kill()
    }

    /// Through `ChildProcess` (posix_spawn, reaped with waitpid) like the client suites' parleyd,
    /// not Foundation's `Process`, whose children inherit the signal mask of the test's threads.
    private func command(_ arguments: [String], environment: [String: String] = [:]) throws -> ChildProcess {
        guard let executable = Self.executable else { throw ScenarioFailure("parleyd is not built next to the tests") }
        return try ChildProcess(
            executable.path, arguments, environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
            output: directory + "/parleyd.log")
    }
}
