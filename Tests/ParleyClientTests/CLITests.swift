import Foundation
import ParleyTestSupport
import Testing

/// The `parley` executable as scripts use it: its output and documented exit codes, against
/// a real parleyd. (Not on a pty: colour and the password prompt are not covered here.)
@Suite(.serialized, .enabled(if: CLI.executable != nil, "the parley executable is built next to the tests"))
struct CLITests {
    @Test func oneShotCommandsAndTheirExitCodes() async throws {
        try await withServer { server in
            let cli = try CLI(server: server)
            try cli.writeConfig("alice", password: nil)
            try cli.writeConfig("bob", password: "bob's password")

            var result = try await cli.run(["register", "--config", cli.config("alice")], password: "alice's password")
            #expect(result.status == 0 && result.stdout.contains("registered alice@localhost"))
            result = try await cli.run(["register", "--config", cli.config("alice")], password: "alice's password")
            #expect(result.status == 4 && result.stderr.contains("taken"))
            #expect(try await cli.run(["register", "--config", cli.config("bob")]).status == 0)

            result = try await cli.run(["roster", "--config", cli.config("alice")], password: "wrong password")
            #expect(result.status == 2 && result.stderr.hasPrefix("parley: authentication failed"))
            #expect(result.stderr.split(separator: "\n").count == 1)

            result = try await cli.run(["add", "bob@localhost", "--message", "it's Alice", "--config", cli.config("alice")], password: "alice's password")
            #expect(result.status == 0)
            #expect(try await cli.run(["accept", "alice@localhost", "--config", cli.config("bob")]).status == 0)
            result = try await cli.run(["roster", "--config", cli.config("alice")], password: "alice's password")
            #expect(result.status == 0 && result.stdout.contains("bob@localhost"))
            result = try await cli.run(["send", "bob@localhost", "hello from a script", "--config", cli.config("alice")], password: "alice's password")
            #expect(result.status == 0)
            result = try await cli.run(["history", "alice@localhost", "--config", cli.config("bob")])
            #expect(result.status == 0 && result.stdout.contains("alice@localhost: hello from a script"))

            #expect(try await cli.run(["send", "--config", cli.config("bob")]).status == 1)
        }
    }

    @Test func anUntrustedCertificateNamesItsFingerprintAndTheFix() async throws {
        try await withServer { server in
            let cli = try CLI(server: server)
            try cli.writeConfig("alice", password: nil, trust: false)
            let result = try await cli.run(["roster", "--config", cli.config("alice")], password: "whatever")
            #expect(result.status == 3)
            #expect(result.stderr.contains(server.running.certificateFingerprint!) && result.stderr.contains("--trust-fingerprint"))
        }
    }

    @Test func aPasswordInAConfigOthersCanReadIsRefused() async throws {
        try await withServer { server in
            let cli = try CLI(server: server)
            try cli.writeConfig("bob", password: "bob's password", mode: 0o644)
            let result = try await cli.run(["roster", "--config", cli.config("bob")])
            #expect(result.status == 1 && result.stderr.contains("chmod 600"))
        }
    }
}

/// Runs the built `parley` with a private HOME, config files and cache.
struct CLI {
    static let executable: URL? = {
        let url = Bundle.main.executableURL?.deletingLastPathComponent().appendingPathComponent("parley")
        return url.flatMap { FileManager.default.isExecutableFile(atPath: $0.path) ? $0 : nil }
    }()

    let home: String
    let port: Int
    let fingerprint: String

    init(server: TestServer) throws {
        try self.init(home: server.directory + "/home", port: server.running.c2sPort, fingerprint: server.running.certificateFingerprint!)
    }

    init(home: String, port: Int, fingerprint: String) throws {
        self.home = home
        self.port = port
        self.fingerprint = fingerprint
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
    }

    func config(_ user: String) -> String { "\(home)/\(user).json" }

    func writeConfig(_ user: String, password: String?, trust: Bool = true, mode: Int = 0o600, at path: String? = nil) throws {
        var object: [String: Any] = ["jid": "\(user)@localhost", "host": "127.0.0.1", "port": port]
        if trust { object["trusted_fingerprint"] = fingerprint }
        if let password { object["password"] = password }
        let file = path ?? config(user)
        try FileManager.default.createDirectory(atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: file))
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: file)
    }

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// `environment` replaces the usual one (private HOME and XDG directories).
    /// `executable`: another program to run (one that runs parley itself, such as time).
    func run(
        _ arguments: [String], password: String? = nil, environment custom: [String: String]? = nil, executable: URL? = nil
    ) async throws -> Result {
        let process = Process()
        process.executableURL = executable ?? Self.executable
        process.arguments = arguments
        var environment = custom ?? ["HOME": home, "XDG_CONFIG_HOME": home + "/config", "XDG_DATA_HOME": home + "/data", "PATH": "/usr/bin:/bin"]
        if let password { environment["PARLEY_PASSWORD"] = password }
        process.environment = environment
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do {
                try ProcessLaunch.run(process)
            } catch {
                continuation.resume(throwing: error)
            }
        }
        let stdout = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return Result(status: status, stdout: stdout, stderr: stderr)
    }
}
