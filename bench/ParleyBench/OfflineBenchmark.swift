import Foundation
import GRDB
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ParleyCore

/// `ParleyBench offline`: offline message storage and delivery.
///
/// 1. store: S senders log in and send, as fast as they can, R·K chat messages to the bare
///    JIDs of R recipients that are not logged in (sender s's j-th message goes to recipient
///    (s + j) mod R, K per recipient), then each pings the server. `accepted` is when every
///    sender has its pong (the server has read everything); `stored` is when the server's
///    `offline_messages` table holds them all (`--sqlite FILE`, polled every few ms: parleyd
///    commits durably before it counts), or as a shell command prints it (`--count-command CMD`,
///    e.g. `psql -tAc 'SELECT COUNT(*) FROM offline_messages'` for parleyd on PostgreSQL), or
///    as one long-running command answers a line per poll (`--count-session CMD`: each poll
///    writes `SELECT COUNT(*) FROM offline_messages;` to its input and reads one line, e.g.
///    `psql -tAq`). A new psql per poll costs ~26 ms of client CPU and a connection's start-up
///    (~58 ms of wall time a poll, back to back); one session ~1.4 ms a poll, as the SQLite
///    read. (In interleaved runs the stored rate did not measurably differ: bench/README.md.)
///    Without either only `accepted` is known (right for a server that stores synchronously
///    while it handles the stanza, like Prosody).
/// 2. drain: each recipient in turn logs in; from its initial presence to the K-th message
///    → messages/s. Every message must arrive once, each sender's in order.
enum OfflineBenchmark: Benchmark {
    static var name: String { "offline" }
    static var summary: String {
        "offline store and drain: --port P [--senders S] [--recipients R] [--per-recipient K] [--sqlite FILE | --count-command CMD] [--server-pid PID]"
    }

    static func run(arguments: [String]) throws {
        let options = try BenchOptions(
            arguments,
            valueOptions: [
                "--host", "--port", "--domain", "--senders", "--recipients", "--per-recipient", "--first-user", "--prefix",
                "--password", "--threads", "--sqlite", "--count-command", "--count-session", "--server-pid", "--label", "--timeout",
            ])
        let senders = max(1, try options.int("--senders", default: 20))
        let recipients = max(1, try options.int("--recipients", default: 2))
        let perRecipient = max(1, try options.int("--per-recipient", default: 20_000))
        guard (recipients * perRecipient) % senders == 0, (recipients * perRecipient / senders) % recipients == 0 else {
            throw UsageError(description: "recipients × per-recipient must split evenly: senders × recipients must divide it")
        }
        let settings = LoginBenchmark.Settings(
            host: try options.string("--host", default: "127.0.0.1"),
            port: try options.int("--port"),
            domain: try options.string("--domain", default: "localhost"),
            users: senders + recipients,
            firstUser: try options.int("--first-user", default: 1),
            prefix: try options.string("--prefix", default: "user"),
            password: try options.string("--password", default: "benchpass"),
            concurrency: senders,
            sources: 1,
            hold: true)
        let threads = max(1, try options.int("--threads", default: System.coreCount))
        let label = try options.string("--label", default: "\(settings.host):\(settings.port)")
        let timeout = Double(try options.int("--timeout", default: 60))
        let server = try options.optionalString("--server-pid").map { text -> ServerProcess in
            guard let pid = Int(text) else { throw UsageError(description: "--server-pid must be a process id") }
            return ServerProcess(pid: pid)
        }
        let counter = try options.optionalString("--sqlite").map { path -> DatabaseQueue in
            var configuration = Configuration()
            configuration.readonly = true
            return try DatabaseQueue(path: path, configuration: configuration)
        }
        let countCommand = options.optionalString("--count-command")
        let countSession = try options.optionalString("--count-session").map(CountSession.init)
        let count: () throws -> Int = {
            if let countSession { return try countSession.count() }
            if let countCommand { return try Self.runCount(countCommand) }
            return try counter?.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM offline_messages") } ?? 0
        }
        let counting = counter != nil || countCommand != nil || countSession != nil
        _ = LoginBenchmark.raiseFileLimit()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        let keys = SCRAMKeyCache()
        let recipientJIDs = (0..<recipients).map { "\(settings.prefix)\(settings.firstUser + senders + $0)@\(settings.domain)" }
        let total = recipients * perRecipient
        var healthy = true

        // Store.
        let senderState = OfflineSenders(count: senders)
        let loggedIn = DispatchGroup()
        let loginFailures = NIOLockedValueBox<[String]>([])
        for index in 0..<senders {
            loggedIn.enter()
            let perSender = total / senders
            LoginClient.connect(
                on: group.next(), number: settings.firstUser + index, sourceIndex: index, settings: settings, keys: keys,
                next: {
                    OfflineSenderHandler(
                        index: index, messages: perSender, recipients: recipientJIDs, domain: settings.domain,
                        state: senderState)
                },
                finish: { outcome in
                    if case .failure(let reason) = outcome { loginFailures.withLockedValue { $0.append(reason) } }
                    loggedIn.leave()
                }
            ).whenFailure { error in
                loginFailures.withLockedValue { $0.append("connect: \(error)") }
                loggedIn.leave()
            }
        }
        guard loggedIn.wait(timeout: .now() + timeout) == .success, loginFailures.withLockedValue({ $0.isEmpty }) else {
            say("\(label): sender logins failed: \(loginFailures.withLockedValue { $0.prefix(3) })")
            exit(1)
        }
        let before = try count()
        let cpuBefore = server?.cpuSeconds()
        let start = NIODeadline.now()
        senderState.go()
        var stored: NIODeadline?
        let deadline = start + .nanoseconds(Int64(timeout * 1e9))
        while NIODeadline.now() < deadline {
            if counting {
                if try count() - before >= total {
                    stored = .now()
                    break
                }
                if senderState.allAccepted, senderState.errors > 0, try count() - before + senderState.errors >= total { break }
                Thread.sleep(forTimeInterval: 0.002)
            } else {
                if senderState.allAccepted { break }
                Thread.sleep(forTimeInterval: 0.002)
            }
        }
        let cpuStore = server?.cpuSeconds()
        let accepted = senderState.acceptedAt.map { Double(($0 - start).nanoseconds) / 1e9 }
        let storedSeconds = stored.map { Double(($0 - start).nanoseconds) / 1e9 }
        let measured = counting ? storedSeconds : accepted
        let storeRate = measured.map { Double(total) / $0 } ?? 0
        let storedCount = try count() - before
        let storeCPU = cpuBefore.flatMap { before in cpuStore.map { $0 - before } }
        if measured == nil || senderState.errors > 0 { healthy = false }
        say(
            "\(label) offline store: \(total) messages from \(senders) senders to \(recipients) offline recipients; "
                + "all read by the server (pongs) after \(accepted.map { format($0, 3) + " s" } ?? "timeout")"
                + (counting ? ", all committed after \(storedSeconds.map { format($0, 3) + " s" } ?? "timeout (\(storedCount) stored)")" : "")
                + " -> \(format(storeRate, 0)) msg/s; errors \(senderState.errors)"
                + (storeCPU.map { ", server CPU \(format($0, 3)) s = \(format($0 * 10_000 / Double(total), 3)) s/10k" } ?? ""))
        say(
            "RESULT label=\(label) phase=store messages=\(total) accepted_s=\(format(accepted ?? 0, 3)) "
                + "stored_s=\(format(measured ?? 0, 3)) rate=\(format(storeRate, 1)) errors=\(senderState.errors) "
                + "cpu_s=\(format(storeCPU ?? 0, 3))")

        // Drain, one recipient after the other.
        var drained = 0
        var drainSeconds = 0.0
        var drainCPU = 0.0
        for index in 0..<recipients {
            let drain = OfflineDrain(expected: perRecipient)
            let cpuBefore = server?.cpuSeconds()
            LoginClient.connect(
                on: group.next(), number: settings.firstUser + senders + index, sourceIndex: index, settings: settings,
                keys: keys, next: { OfflineDrainHandler(drain: drain) },
                finish: { outcome in if case .failure(let reason) = outcome { drain.fail(reason) } }
            ).whenFailure { error in drain.fail("connect: \(error)") }
            let finished = drain.wait(timeout: timeout)
            let cpuAfter = server?.cpuSeconds()
            let report = drain.report()
            if !finished || report.received != perRecipient || report.disorder > 0 || report.failure != nil { healthy = false }
            drained += report.received
            drainSeconds += report.seconds
            if let cpuBefore, let cpuAfter { drainCPU += cpuAfter - cpuBefore }
            say(
                "\(label) offline drain \(recipientJIDs[index]): \(report.received)/\(perRecipient) in "
                    + "\(format(report.seconds, 3)) s = \(format(report.seconds > 0 ? Double(report.received) / report.seconds : 0, 0)) msg/s"
                    + ", disorder \(report.disorder)" + (report.failure.map { ", failed: \($0)" } ?? "")
                    + (finished ? "" : ", timed out"))
        }
        let drainRate = drainSeconds > 0 ? Double(drained) / drainSeconds : 0
        say(
            "RESULT label=\(label) phase=drain messages=\(drained) seconds=\(format(drainSeconds, 3)) "
                + "rate=\(format(drainRate, 1)) cpu_s=\(format(drainCPU, 3))")
        exit(healthy ? 0 : 1)
    }
}

extension OfflineBenchmark {
    /// The number a shell command prints (the stored count, from outside the server).
    static func runCount(_ command: String) throws -> Int {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard process.terminationStatus == 0, let value = Int(text) else {
            throw UsageError(description: "--count-command printed '\(text)' (exit \(process.terminationStatus)), not a number")
        }
        return value
    }
}

/// `--count-session`: one shell command started once, asked for the count a line at a time.
final class CountSession {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private var buffered: [UInt8] = []

    init(_ command: String) throws {
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        process.standardInput = input
        process.standardOutput = output
        try process.run()
    }

    deinit {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }

    func count() throws -> Int {
        input.fileHandleForWriting.write(Data("SELECT COUNT(*) FROM offline_messages;\n".utf8))
        while true {
            if let newline = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                let text = String(decoding: buffered[..<newline], as: UTF8.self).trimmingCharacters(in: .whitespaces)
                buffered.removeSubrange(...newline)
                guard let value = Int(text) else { throw UsageError(description: "--count-session printed '\(text)', not a number") }
                return value
            }
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { throw UsageError(description: "--count-session ended (exit \(process.terminationStatus))") }
            buffered += chunk
        }
    }
}

/// What the senders share: the start signal (their channels wait for it), pongs, errors.
final class OfflineSenders: Sendable {
    private struct State {
        var starters: [@Sendable () -> Void] = []
        var started = false
        var accepted = 0
        var acceptedAt: NIODeadline?
        var errors = 0
    }

    private let count: Int
    private let state = NIOLockedValueBox(State())

    init(count: Int) { self.count = count }

    func whenStarted(_ start: @escaping @Sendable () -> Void) {
        let now = state.withLockedValue { state -> Bool in
            if state.started { return true }
            state.starters.append(start)
            return false
        }
        if now { start() }
    }

    func go() {
        let starters = state.withLockedValue { state in
            state.started = true
            defer { state.starters = [] }
            return state.starters
        }
        for start in starters { start() }
    }

    func accepted() {
        state.withLockedValue { state in
            state.accepted += 1
            if state.accepted == count { state.acceptedAt = .now() }
        }
    }

    func error() { state.withLockedValue { $0.errors += 1 } }

    var allAccepted: Bool { state.withLockedValue { $0.accepted == count } }
    var acceptedAt: NIODeadline? { state.withLockedValue { $0.acceptedAt } }
    var errors: Int { state.withLockedValue { $0.errors } }
}

/// One sender: once logged in and told to go, writes its messages in flushed chunks (letting
/// the loop read in between), then a ping; counts error replies.
final class OfflineSenderHandler: ChannelInboundHandler {
    typealias InboundIn = XMLStreamEvent

    private static let chunk = 64
    private let index: Int
    private let messages: Int
    private let recipients: [String]
    private let domain: String
    private let state: OfflineSenders
    private var next = 0

    init(index: Int, messages: Int, recipients: [String], domain: String, state: OfflineSenders) {
        self.index = index
        self.messages = messages
        self.recipients = recipients
        self.domain = domain
        self.state = state
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard case .loggedIn? = event as? LoginClientHandler.Event else { return }
        let loop = context.eventLoop
        let bound = NIOLoopBound(context, eventLoop: loop)
        let handler = NIOLoopBound(self, eventLoop: loop)
        state.whenStarted { loop.execute { handler.value.sendChunk(context: bound.value) } }
    }

    private func sendChunk(context: ChannelHandlerContext) {
        var buffer = context.channel.allocator.buffer(capacity: 256 * Self.chunk)
        let end = min(messages, next + Self.chunk)
        while next < end {
            let to = recipients[(index + next) % recipients.count]
            buffer.writeString(
                "<message to='\(to)' type='chat' id='o\(next)'><body>\(index) \(next) an offline benchmark message, about as long as a short chat line</body></message>")
            next += 1
        }
        if next == messages {
            buffer.writeString("<iq type='get' id='offline-done' to='\(domain)'><ping xmlns='urn:xmpp:ping'/></iq>")
        }
        context.writeAndFlush(NIOAny(buffer), promise: nil)
        if next < messages {
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
            context.eventLoop.execute { handler.value.sendChunk(context: bound.value) }
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .stanza(let element) = unwrapInboundIn(data) else { return }
        if element.type == "error" {
            state.error()
        } else if element.name == "iq", element[attribute: "id"] == "offline-done" {
            state.accepted()
        }
    }
}

/// One recipient's drain: counts and checks what arrives.
final class OfflineDrain: Sendable {
    struct Report {
        var received = 0
        var disorder = 0
        var seconds = 0.0
        var failure: String?
    }

    private struct State {
        var presenceSent: NIODeadline?
        var last: NIODeadline?
        var received = 0
        var disorder = 0
        var lastSequence: [Int: Int] = [:]
        var failure: String?
    }

    let expected: Int
    private let state = NIOLockedValueBox(State())
    private let done = DispatchSemaphore(value: 0)

    init(expected: Int) { self.expected = expected }

    func presenceSent(_ time: NIODeadline) { state.withLockedValue { $0.presenceSent = time } }

    func received(sender: Int, sequence: Int) {
        let now = NIODeadline.now()
        let finished = state.withLockedValue { state -> Bool in
            if let last = state.lastSequence[sender], sequence <= last { state.disorder += 1 }
            state.lastSequence[sender] = sequence
            state.received += 1
            state.last = now
            return state.received == expected
        }
        if finished { done.signal() }
    }

    func fail(_ reason: String) {
        state.withLockedValue { $0.failure = $0.failure ?? reason }
        done.signal()
    }

    func wait(timeout: Double) -> Bool { done.wait(timeout: .now() + timeout) == .success }

    func report() -> Report {
        state.withLockedValue { state in
            var report = Report(received: state.received, disorder: state.disorder, failure: state.failure)
            if let first = state.presenceSent, let last = state.last {
                report.seconds = Double((last - first).nanoseconds) / 1e9
            }
            return report
        }
    }
}

final class OfflineDrainHandler: ChannelInboundHandler {
    typealias InboundIn = XMLStreamEvent

    private let drain: OfflineDrain

    init(drain: OfflineDrain) { self.drain = drain }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .presenceSent(let time)? = event as? LoginClientHandler.Event { drain.presenceSent(time) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .stanza(let element) = unwrapInboundIn(data), element.name == "message" else { return }
        guard let body = element.firstChild("body")?.text else { return }
        let fields = body.split(separator: " ", maxSplits: 2)
        guard fields.count >= 2, let sender = Int(fields[0]), let sequence = Int(fields[1]) else { return }
        drain.received(sender: sender, sequence: sequence)
    }
}
