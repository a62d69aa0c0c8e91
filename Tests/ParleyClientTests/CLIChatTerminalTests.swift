#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import ParleyTestSupport
import Synchronization
import Testing

/// `parley chat` as a person uses it: on a pseudo-terminal (so with colour, which the
/// assertions strip), typing lines and reading the screen, for two users of a parleyd that
/// allows one device per account.
@Suite(.serialized, .enabled(if: CLI.executable != nil, "the parley executable is built next to the tests"))
struct CLIChatTerminalTests {
    @Test func twoUsersBefriendAndChatThenALoginElsewhereSignsTheFirstOut() async throws {
        try await withServer(singleDevice: true) { server in
            try await server.createAccount("alice")
            try await server.createAccount("bob")
            let cli = try CLI(server: server)
            try cli.writeConfig("alice", password: nil)
            try cli.writeConfig("bob", password: nil)

            let alice = try TerminalSession(cli, ["chat", "--config", cli.config("alice")], name: "alice")
            let bob = try TerminalSession(cli, ["chat", "--config", cli.config("bob")], name: "bob")
            var sessions = [alice, bob]
            defer { for session in sessions { session.end() } }
            do {
                for session in [alice, bob] {
                    try await session.waitFor("connected as \(session.name)@localhost/")
                    try await session.waitFor("type /help for commands")
                }

                // The friend request, its note, the acceptance.
                try alice.type("/add bob@localhost hi")
                try await alice.waitFor("asked bob@localhost to be friends")
                try await bob.waitFor("alice@localhost wants to be friends: \"hi\" — /accept alice@localhost or /decline alice@localhost")
                try bob.type("/accept alice@localhost")
                try await bob.waitFor("accepted alice@localhost")
                try await alice.waitFor("bob@localhost accepted your request")
                try await bob.waitFor("alice@localhost accepted your request")
                // The roster follows through pushes: ask until it shows the friendship.
                try await alice.waitFor("bob@localhost  friends", retyping: "/roster")

                // Chat both ways.
                try alice.type("/to bob@localhost")
                try await alice.waitFor("talking to bob@localhost")
                try alice.type("hello from alice's terminal")
                try await bob.waitFor("alice@localhost: hello from alice's terminal")
                // The message's way shows on the sender's screen, forward only: the server's
                // acknowledgement ("✓ sent") shows unless Bob's receipt overtook it.
                try await alice.waitFor("✓✓ delivered: “hello from alice's terminal”")
                let afterDelivered = alice.screen.components(separatedBy: "✓✓ delivered: “hello from alice's terminal”").last ?? ""
                #expect(!afterDelivered.contains("✓ sent: “hello from alice's terminal”"), "\(alice.screen)")
                try bob.type("/to alice@localhost")
                try await bob.waitFor("talking to alice@localhost")
                try bob.type("hi alice, bob here")
                try await alice.waitFor("bob@localhost: hi alice, bob here")
                // Bob opened the conversation and answered: he has read it.
                try await alice.waitFor("✓✓ read: “hello from alice's terminal”")

                // Alice takes a message back; both screens say so, and so does the history.
                try alice.type("oops, wrong window")
                try await bob.waitFor("alice@localhost: oops, wrong window")
                try alice.type("/recall")
                try await alice.waitFor("you recalled a message to bob@localhost (message recalled)")
                try await bob.waitFor("alice@localhost recalled a message (message recalled)")
                try bob.type("/history")
                try await bob.waitFor("alice@localhost: (message recalled)")
                try await bob.waitFor("me: hi alice, bob here  ✓✓")

                // Alice signs in on another device: the first terminal is told, and stays out.
                let cache = server.directory + "/home/alice-second-device.sqlite"
                let secondConfig = try cli.writeConfig("alice-second-device", jid: "alice@localhost", cache: cache)
                let secondAlice = try TerminalSession(cli, ["chat", "--config", secondConfig], name: "alice (second device)")
                sessions.append(secondAlice)
                try await secondAlice.waitFor("connected as alice@localhost/")
                try await alice.waitFor("signed out: your account logged in on another device")
                // A reconnect would show at once ("reconnecting in …"), and try within about a second.
                try await Task.sleep(for: .seconds(1.5))
                let afterKick = alice.screen.components(separatedBy: "signed out: your account logged in on another device").last ?? ""
                #expect(!afterKick.contains("reconnecting") && !afterKick.contains("connecting") && !afterKick.contains("connected as"), "\(afterKick)")
                // As designed, the kicked chat stays open (idle) until the user quits.
                #expect(alice.isRunning)
                try alice.type("/quit")
                #expect(try await alice.waitForExit() == 0)
                // The second device was not disturbed.
                #expect(!secondAlice.screen.contains("signed out"))
                try secondAlice.type("/quit")
                #expect(try await secondAlice.waitForExit() == 0)
            } catch {
                for session in sessions { print("--- \(session.name)'s terminal ---\n\(session.screen)") }
                throw error
            }
        }
    }
}

extension CLI {
    /// A config file for another device or name of an account, with its own cache.
    func writeConfig(_ file: String, jid: String, cache: String) throws -> String {
        let object: [String: Any] = ["jid": jid, "host": "127.0.0.1", "port": port, "trusted_fingerprint": fingerprint, "cache": cache]
        let path = config(file)
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        return path
    }
}

/// The `parley` executable on a pseudo-terminal: what was typed goes to its input, what it
/// prints is collected as the "screen" (ANSI colour codes and carriage returns removed).
final class TerminalSession {
    let name: String
    private let process: Process
    private let master: Int32
    private let output = Mutex(Data())

    /// `searchPath` is the process's PATH: tests that depend on which helper programs exist
    /// (xdg-open) give it a folder of their own instead of the machine's.
    init(
        _ cli: CLI, _ arguments: [String], name: String, password: String = TestServer.password,
        searchPath: String = "/usr/bin:/bin"
    ) throws {
        self.name = name
        let (master, slaveName) = try PseudoTerminal.open()
        let slave = open(slaveName, O_RDWR | O_NOCTTY)
        guard slave >= 0 else { throw TimedOut(description: "cannot open the pty's terminal side: errno \(errno)") }
        // Reads below never block: the screen is collected while waiting, between sleeps.
        _ = fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK)
        self.master = master

        let process = Process()
        process.executableURL = CLI.executable
        process.arguments = arguments
        process.environment = [
            "HOME": cli.home, "XDG_CONFIG_HOME": cli.home + "/config", "XDG_DATA_HOME": cli.home + "/data", "PATH": searchPath,
            "TERM": "xterm-256color", "PARLEY_PASSWORD": password,
        ]
        let terminal = FileHandle(fileDescriptor: slave, closeOnDealloc: false)
        process.standardInput = terminal
        process.standardOutput = terminal
        process.standardError = terminal
        do {
            try ProcessLaunch.run(process)
        } catch {
            close(slave)
            close(master)
            throw error
        }
        // The child has its own copies; ours would keep the terminal open after it exits.
        close(slave)
        self.process = process
    }

    deinit {
        close(master)
    }

    var isRunning: Bool { process.isRunning }

    /// Everything printed so far, without colour codes and carriage returns.
    var screen: String {
        drain()
        let text = output.withLock { String(decoding: $0, as: UTF8.self) }
        return text.replacing(#/\x{1B}\[[0-9;?]*[A-Za-z]/#, with: "").replacingOccurrences(of: "\r", with: "")
    }

    /// Everything printed so far, colour codes included.
    var rawScreen: String {
        drain()
        return output.withLock { String(decoding: $0, as: UTF8.self) }
    }

    /// Types a line (as Enter would end it).
    func type(_ line: String) throws {
        let bytes = Array((line + "\n").utf8)
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { write(master, $0.baseAddress, $0.count) }
            if count < 0 {
                guard errno == EAGAIN || errno == EINTR else { throw TimedOut(description: "\(name): cannot type: errno \(errno)") }
                usleep(1000)
                continue
            }
            written += count
        }
    }

    /// Waits until the screen shows `text`; with `retyping`, types that line again every
    /// second until it does. (The terminal echoes what is typed, so `text` must be something
    /// only parley prints.)
    func waitFor(_ text: String, within timeout: Duration = .seconds(15), retyping: String? = nil) async throws {
        let deadline = ContinuousClock.now + timeout
        var nextTyping = ContinuousClock.now
        while true {
            if let retyping, ContinuousClock.now >= nextTyping {
                try type(retyping)
                nextTyping = ContinuousClock.now + .seconds(1)
                try await Task.sleep(for: .milliseconds(100))
            }
            if screen.contains(text) { return }
            guard ContinuousClock.now < deadline else {
                throw TimedOut(description: "\(name)'s terminal did not show \"\(text)\" within \(timeout); it shows:\n\(screen)")
            }
            try await Task.sleep(for: .milliseconds(25))
        }
    }

    /// Waits for the process to end; its exit status.
    func waitForExit(within timeout: Duration = .seconds(10)) async throws -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            guard ContinuousClock.now < deadline else { throw TimedOut(description: "\(name)'s parley did not exit within \(timeout)") }
            drain()
            try await Task.sleep(for: .milliseconds(25))
        }
        drain()
        return process.terminationStatus
    }

    /// Ends the process if it still runs (the test's cleanup).
    func end() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Moves what the terminal has for us into `output`.
    private func drain() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(master, $0.baseAddress, $0.count) }
            guard count > 0 else { return }  // EAGAIN: nothing more now; EIO: the child is gone
            output.withLock { $0.append(contentsOf: buffer[0..<count]) }
        }
    }
}

/// posix_openpt(3) and friends, which the Glibc module does not export (its headers hide them
/// behind _XOPEN_SOURCE): looked up in the C library at run time instead.
enum PseudoTerminal {
    private typealias OpenPT = @convention(c) (Int32) -> Int32
    private typealias OnFD = @convention(c) (Int32) -> Int32
    private typealias PTSName = @convention(c) (Int32, UnsafeMutablePointer<CChar>?, Int) -> Int32

    private static func function<T>(_ name: String, _ type: T.Type) throws -> T {
        guard let library = dlopen(nil, RTLD_NOW), let symbol = dlsym(library, name) else {
            throw TimedOut(description: "\(name) is not in the C library")
        }
        return unsafeBitCast(symbol, to: type)
    }

    /// A new pseudo-terminal: the controlling side, and the path of the terminal side.
    static func open() throws -> (master: Int32, slavePath: String) {
        let master = try function("posix_openpt", OpenPT.self)(O_RDWR | O_NOCTTY)
        guard master >= 0 else { throw TimedOut(description: "posix_openpt: errno \(errno)") }
        var name = [CChar](repeating: 0, count: 128)
        guard try function("grantpt", OnFD.self)(master) == 0, try function("unlockpt", OnFD.self)(master) == 0,
            try function("ptsname_r", PTSName.self)(master, &name, name.count) == 0
        else {
            close(master)
            throw TimedOut(description: "cannot set up the pseudo-terminal: errno \(errno)")
        }
        return (master, String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
}
