#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import ParleyClient
import ParleyCore
import ParleyTLS
import ParleyTestSupport
import Testing

/// The client against another server: the same scenario as against parleyd
/// (`loginRosterFriendRequestChatScenario`), played against a Prosody 0.12 that the test
/// starts on 127.0.0.1 (Debian package `prosody`, installed by scripts/install-deps.sh).
@Suite struct ProsodyInteropTests {
    @Test func loginRosterFriendRequestAndChatAgainstProsody() async throws {
        let prosody = try await ProsodyServer.start(users: ["alice": "alice's password", "bob": "bob's password"])
        do {
            try await loginRosterFriendRequestChatScenario(cacheDirectory: prosody.directory + "/clients") { username in
                try prosody.configuration(for: username, password: "\(username)'s password")
            }
        } catch {
            print("--- Prosody log (\(prosody.logPath)), last lines ---\n\(prosody.logTail())")
            await prosody.stop()
            throw error
        }
        // The client did not bring Prosody down. How Prosody then shuts down is its own
        // business (its shutdown waits on its own timers), so an unclean ending is reported,
        // not failed.
        let survived = prosody.process.isRunning
        let ending = await prosody.stop()
        #expect(survived, "Prosody did not survive the scenario: \(ending)")
        if survived, !ending.clean { print("note: \(ending)") }
    }

    /// The no-message-lost exchange against Prosody's own XEP-0198 (mod_smacks) and MAM
    /// (mod_mam), through the connection cutter. Over TLS the cutter cannot see stanzas, so
    /// it cuts after random byte counts only.
    @Test func messagesSurviveConnectionCutsWithProsodysStreamManagementAndArchive() async throws {
        let prosody = try await ProsodyServer.start(
            users: ["alice": "alice's password", "bob": "bob's password"], modules: ["smacks", "mam"])
        let proxy = try await FaultInjectingProxy.start(
            upstreamPort: prosody.port, seed: 11, plan: FaultInjectingProxy.Plan(bytesBeforeCut: 10_000...80_000, cutAfterMessage: 0))
        let messages = MessageExchange(perSide: 300)
        do {
            func client(_ name: String) throws -> (ChatClient, EventRecorder) {
                try MessageExchange.client(
                    prosody.configuration(for: name, password: "\(name)'s password"), through: proxy, cacheDirectory: prosody.directory + "/clients")
            }
            let (alice, aliceEvents) = try client("alice")
            let (bob, bobEvents) = try client("bob")
            let (aliceHistory, _) = try await messages.throughCuts(alice, bob, proxy: proxy)
            let resumed = MessageExchange.sessions(aliceEvents).resumed + MessageExchange.sessions(bobEvents).resumed
            print("Prosody through the cutter: \(proxy.counts); \(resumed) resumptions; each cache holds \(aliceHistory.count) messages, each exactly once, same order")
            #expect(proxy.counts.cuts > 0)
            #expect(resumed > 0, "Prosody's sessions were resumed")
            await alice.disconnect()
            await bob.disconnect()
        } catch {
            print("--- Prosody log (\(prosody.logPath)), last lines ---\n\(prosody.logTail())")
            await proxy.stop()
            await prosody.stop()
            throw error
        }
        await proxy.stop()
        await prosody.stop()
    }
}

/// A Prosody of its own: temporary configuration, data, certificate and log, one free port
/// on 127.0.0.1 for client connections (STARTTLS required), no server-to-server, no HTTP.
final class ProsodyServer: @unchecked Sendable {
    static let executable = "/usr/bin/prosody"
    static let control = "/usr/bin/prosodyctl"

    let directory: String
    let port: Int
    let fingerprint: String
    let process: Process

    var configPath: String { Self.configPath(in: directory) }
    var logPath: String { Self.logPath(in: directory) }
    static func configPath(in directory: String) -> String { directory + "/prosody.cfg.lua" }
    static func logPath(in directory: String) -> String { directory + "/prosody.log" }

    private init(directory: String, port: Int, fingerprint: String, process: Process) {
        self.directory = directory
        self.port = port
        self.fingerprint = fingerprint
        self.process = process
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Writes the configuration, creates `users` (name: password) with prosodyctl, starts
    /// Prosody in the foreground and returns once it listens.
    /// `modules` are enabled on top of the basic set (for example "smacks", "mam").
    /// A user named "name@host" is created on `host`, one of `extraHosts` (virtual hosts that
    /// lack the modules listed for them), instead of on localhost.
    /// `options` are more global settings, as Lua lines; `components` are Lua lines after the
    /// hosts (`Component "…" "…"` sections); `httpPort` opens Prosody's plain HTTP server
    /// there, on 127.0.0.1.
    static func start(
        users: [String: String], modules: [String] = [], extraHosts: [String: [String]] = [:], options: String = "", components: String = "",
        httpPort: Int? = nil
    ) async throws -> ProsodyServer {
        for tool in [executable, control] where !FileManager.default.isExecutableFile(atPath: tool) {
            throw Failure(description: "\(tool) is missing: the Prosody interop test needs Debian's prosody 0.12 package (run scripts/install-deps.sh, or apt-get install prosody)")
        }
        let directory = NSTemporaryDirectory() + "parley-prosody-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory + "/data", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: directory + "/certs", withIntermediateDirectories: true)
        let certificate = try SelfSignedCertificate.generate(domain: "localhost", validityDays: 2)
        try certificate.write(certificatePath: directory + "/certs/localhost.crt", privateKeyPath: directory + "/certs/localhost.key")
        // Started through a link of its own name: a stray-Prosody cleanup that matches the
        // command line "/usr/bin/prosody" (other checkouts' install scripts) leaves it alone.
        try FileManager.default.createSymbolicLink(atPath: directory + "/prosody-parley-test", withDestinationPath: executable)

        var lastFailure = "not started"
        // The port is free when probed but could be taken before Prosody binds it: try again.
        for _ in 0..<3 {
            let port = try LoopbackPort.unusedBelowEphemeralRange()
            try writeConfig(
                directory: directory, port: port, modules: modules, extraHosts: extraHosts, options: options, components: components,
                httpPort: httpPort)
            if !FileManager.default.fileExists(atPath: directory + "/data/localhost/accounts") {
                for (user, password) in users.sorted(by: { $0.key < $1.key }) {
                    let parts = user.split(separator: "@").map(String.init)
                    let (name, host) = parts.count == 2 ? (parts[0], parts[1]) : (user, "localhost")
                    let (status, output) = try await run(control, ["--config", configPath(in: directory), "register", name, host, password], in: directory)
                    guard status == 0 else {
                        throw Failure(description: "prosodyctl register \(user) failed with status \(status):\n\(output)")
                    }
                }
            }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: directory + "/prosody-parley-test")
            process.arguments = ["-F", "--config", configPath(in: directory)]
            process.currentDirectoryURL = URL(fileURLWithPath: directory)
            process.standardInput = FileHandle.nullDevice
            let output = FileHandle(forWritingAtPath: try createFile(directory + "/prosody.out"))
            process.standardOutput = output
            process.standardError = output
            try await runWithNoSignalsBlocked(process)
            let server = ProsodyServer(directory: directory, port: port, fingerprint: certificate.fingerprint, process: process)
            switch await server.waitUntilListening() {
            case .listening:
                return server
            case .portTaken(let why), .failed(let why):
                lastFailure = why
                await server.stop(removingFiles: false)
            }
        }
        let log = (try? String(contentsOfFile: logPath(in: directory), encoding: .utf8)) ?? ""
        let out = (try? String(contentsOfFile: directory + "/prosody.out", encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(atPath: directory)
        throw Failure(description: "Prosody did not start: \(lastFailure)\n--- prosody.log ---\n\(log)\n--- output ---\n\(out)")
    }

    private static func writeConfig(
        directory: String, port: Int, modules: [String], extraHosts: [String: [String]], options: String, components: String,
        httpPort: Int?
    ) throws {
        func lua(_ text: String) -> String {
            "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        }
        let config = """
            -- Written by ProsodyInteropTests; foreground (-F), everything under \(directory).
            run_as_root = true -- tests run as root on CI; harmless otherwise
            pidfile = \(lua(directory + "/prosody.pid"))
            data_path = \(lua(directory + "/data"))
            certificates = \(lua(directory + "/certs"))
            interfaces = { "127.0.0.1" }
            c2s_ports = { \(port) }
            c2s_direct_tls_ports = {}
            s2s_ports = {}
            http_ports = { \(httpPort.map(String.init) ?? "") }
            http_interfaces = { "127.0.0.1" }
            https_ports = {}
            authentication = "internal_hashed"
            storage = "internal"
            allow_registration = false
            c2s_require_encryption = true
            log = { { levels = { min = "debug" }, to = "file", filename = \(lua(logPath(in: directory))) } }
            modules_enabled = {
                "roster"; "saslauth"; "tls"; "disco"; "ping"; "presence"; "message"; "offline"; "posix"; "stanza_debug";
                \(modules.map { lua($0) + ";" }.joined(separator: " "))
            }
            ssl = { certificate = \(lua(directory + "/certs/localhost.crt")), key = \(lua(directory + "/certs/localhost.key")) }
            \(options)
            VirtualHost "localhost"

            """ + extraHosts.sorted(by: { $0.key < $1.key }).map { host, disabled in
                "VirtualHost \(lua(host))\n    modules_disabled = { \(disabled.map { lua($0) + ";" }.joined(separator: " ")) }\n"
            }.joined() + components
        try config.write(toFile: configPath(in: directory), atomically: true, encoding: .utf8)
    }

    private enum Readiness {
        case listening
        case portTaken(String)
        case failed(String)
    }

    /// Watches the log for the listener (or the reason there is none), for up to 20 s.
    private func waitUntilListening() async -> Readiness {
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            if log.contains("Added listening service c2s to [127.0.0.1]:\(port)") { return .listening }
            // The log is kept across attempts: only this attempt's port counts.
            if log.contains("Failed to open server port \(port) ") { return .portTaken("port \(port) was taken") }
            if !process.isRunning { return .failed("prosody exited with status \(process.terminationStatus)") }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return .failed("no c2s listener on 127.0.0.1:\(port) within 20 s")
    }

    /// A client configuration for `username`: STARTTLS to this Prosody, its certificate pinned.
    func configuration(for username: String, password: String) throws -> ClientConfiguration {
        var configuration = ClientConfiguration(jid: try JID(username.contains("@") ? username : "\(username)@localhost"), password: password)
        configuration.host = "127.0.0.1"
        configuration.port = port
        configuration.security = .startTLS
        configuration.trust = .pinned(.sha256Fingerprint(fingerprint))
        configuration.reconnect.initialDelay = .milliseconds(200)
        configuration.reconnect.maximumDelay = .seconds(1)
        return configuration
    }

    func logTail(lines: Int = 150) -> String {
        let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "(no log at \(logPath))"
        return log.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }

    /// How a stopped Prosody ended.
    struct Ending: CustomStringConvertible {
        /// Prosody exited by itself with status 0 after the SIGTERM.
        var clean: Bool
        var description: String
    }

    /// SIGTERM, up to 20 s for Prosody to exit (then SIGKILL), and the files removed. The
    /// ending's description tells how it ended, with the end of its log and of its own output
    /// as they were after the stop.
    @discardableResult
    func stop(removingFiles: Bool = true) async -> Ending {
        defer { if removingFiles { try? FileManager.default.removeItem(atPath: directory) } }
        let wasRunning = process.isRunning
        let began = ContinuousClock.now
        var how: String
        if wasRunning {
            process.terminate()
            let deadline = ContinuousClock.now + .seconds(20)
            while process.isRunning, ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(50))
            }
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                how = "did not exit within 20 s of SIGTERM and was killed"
            } else {
                how = "exited \(Self.describe(process)) \(ContinuousClock.now - began) after SIGTERM"
            }
        } else {
            how = "had already exited (\(Self.describe(process))) before it was stopped"
        }
        let clean = wasRunning && process.terminationReason == .exit && process.terminationStatus == 0
        if clean { return Ending(clean: true, description: how) }
        let output = (try? String(contentsOfFile: directory + "/prosody.out", encoding: .utf8)) ?? ""
        return Ending(
            clean: false,
            description: "Prosody \(how)\n--- prosody.log, last lines ---\n\(logTail(lines: 60))\n--- its output, last lines ---\n"
                + output.split(separator: "\n").suffix(30).joined(separator: "\n"))
    }

    private static func describe(_ process: Process) -> String {
        switch process.terminationReason {
        case .exit: "with status \(process.terminationStatus)"
        case .uncaughtSignal: "on signal \(process.terminationStatus)"
        @unknown default: "somehow (\(process.terminationStatus))"
        }
    }

    // MARK: Helpers

    /// Starts `process` from a thread of its own that blocks no signals. A child inherits the
    /// signal mask of the thread that spawns it, and the threads async code runs on block
    /// most signals (SIGTERM among them): Prosody started from one would ignore the SIGTERM
    /// that should stop it.
    private static func runWithNoSignalsBlocked(_ process: Process) async throws {
        struct Box: @unchecked Sendable { let process: Process }
        let box = Box(process: process)
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let thread = Thread {
                var none = sigset_t()
                sigemptyset(&none)
                pthread_sigmask(SIG_SETMASK, &none, nil)
                do {
                    try ProcessLaunch.run(box.process)
                    continuation.resume()
                } catch {
                    continuation.resume(throwing: error)
                }
            }
            thread.start()
        }
    }

    private static func createFile(_ path: String) throws -> String {
        guard FileManager.default.createFile(atPath: path, contents: nil) else { throw Failure(description: "cannot create \(path)") }
        return path
    }

    /// Runs a tool to its end (at most 30 s) and returns its status and output.
    private static func run(_ tool: String, _ arguments: [String], in directory: String) async throws -> (Int32, String) {
        let outputPath = try createFile(directory + "/\(UUID().uuidString).out")
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.standardInput = FileHandle.nullDevice
        let output = FileHandle(forWritingAtPath: outputPath)
        process.standardOutput = output
        process.standardError = output
        try ProcessLaunch.run(process)
        let deadline = ContinuousClock.now + .seconds(30)
        while process.isRunning, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw Failure(description: "\(tool) \(arguments.joined(separator: " ")) did not finish within 30 s")
        }
        try? output?.close()
        return (process.terminationStatus, (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "")
    }
}
