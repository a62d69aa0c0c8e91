import Foundation
import ParleyClient
import ParleyCore
import ParleyTLS
import ParleyTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// The real `parleyd` executable in a process of its own, so a test can kill it with SIGKILL
/// (no shutdown, no flush) and start it again on the same data directory and port.
/// Unchecked: a test drives it from one task at a time (a killer task, then the test).
final class ParleydProcess: @unchecked Sendable {
    static let executable: URL? = {
        let url = Bundle.main.executableURL?.deletingLastPathComponent().appendingPathComponent("parleyd")
        return url.flatMap { FileManager.default.isExecutableFile(atPath: $0.path) ? $0 : nil }
    }()

    let directory: String
    let port: Int
    private var process: ChildProcess?

    var configPath: String { directory + "/parleyd.yaml" }
    /// The running server's process id.
    var pid: Int32? { process.flatMap { $0.isRunning ? $0.pid : nil } }

    /// Writes a configuration for 127.0.0.1 on a free port; `extra` is appended YAML.
    init(extra: String = "") throws {
        directory = NSTemporaryDirectory() + "parleyd-process-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        port = try LoopbackPort.unusedBelowEphemeralRange()
        let config = """
            domain: localhost
            data_dir: \(directory)/data
            log_level: warning
            c2s:
              interfaces: [127.0.0.1]
              port: \(port)
              direct_tls_port: 0
            limits:
              stanzas_per_second: 10000
              stanza_burst: 10000
            shutdown:
              grace_period: 2
            \(extra)
            """
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
    }

    deinit {
        process?.kill()
        try? FileManager.default.removeItem(atPath: directory)
    }

    func addUser(_ username: String, password: String) throws {
        let command = try command(["adduser", "--config", configPath, username], environment: ["PARLEYD_PASSWORD": password])
        guard let status = command.waitForExit(blockingFor: .seconds(30)) else {
            command.stop(grace: .zero)
            throw ProcessFailure(description: "parleyd adduser did not finish within 30 s")
        }
        guard status == 0 else { throw ProcessFailure(description: "parleyd adduser exited with wait status \(status)") }
    }

    /// Starts the server and returns once it accepts connections.
    func start() async throws {
        let process = try command(["run", "--config", configPath])
        self.process = process
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            if let status = process.status { throw ProcessFailure(description: "parleyd exited with wait status \(status) on start") }
            if LoopbackPort.accepts(port) { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw ProcessFailure(description: "parleyd did not listen on \(port) within 20 s")
    }

    /// SIGKILL: nothing is flushed or closed politely.
    func kill() {
        process?.kill()
    }

    /// SIGTERM (a graceful shutdown), SIGKILL if that takes over 10 s.
    func stop() {
        process?.stop(grace: .seconds(10))
    }

    /// The self-signed certificate the server made on its first start.
    func certificateFingerprint() throws -> String {
        try CertificateFingerprint.sha256(pemFile: directory + "/data/tls/localhost.crt")
    }

    func clientConfiguration(for username: String, password: String, port: Int? = nil) throws -> ClientConfiguration {
        var configuration = ClientConfiguration(jid: try JID("\(username)@localhost"), password: password)
        configuration.host = "127.0.0.1"
        configuration.port = port ?? self.port
        configuration.trust = .pinned(.sha256Fingerprint(try certificateFingerprint()))
        configuration.reconnect.initialDelay = .milliseconds(100)
        configuration.reconnect.maximumDelay = .milliseconds(500)
        return configuration
    }

    /// Output to a log in the server's directory. (Every path in the configuration is absolute:
    /// the working directory does not matter.)
    private func command(_ arguments: [String], environment: [String: String] = [:]) throws -> ChildProcess {
        guard let executable = Self.executable else { throw ProcessFailure(description: "parleyd is not built next to the tests") }
        return try ChildProcess(
            executable.path, arguments, environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
            output: directory + "/parleyd.log")
    }
}

struct ProcessFailure: Error, CustomStringConvertible {
    var description: String
}
