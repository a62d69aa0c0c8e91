import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ParleyCore

#if canImport(Glibc)
import Glibc
#endif

/// `ParleyBench messages`: N pairs of clients (user1+user2, user3+user4, …) log in like the
/// login benchmark (plain TCP, SCRAM-SHA-256, bind resource `bench`, initial presence, ping),
/// then each client sends chat messages to its partner's full JID, every message carrying a
/// per-direction sequence number and its send time (this process's monotonic clock).
///
/// Phases, each T seconds, reported separately:
/// - `throughput`: each direction keeps W messages in flight (a new one is sent when the
///   partner receives one), as fast as the server delivers;
/// - `rate`: R messages/s in total, evenly paced: direction k of 2N sends at
///   t0 + k/R + j·2N/R (absolute deadlines, no drift).
/// After each phase the senders stop and the run waits until everything sent has arrived.
/// Every sequence number must arrive exactly once and in order: `lost` counts what never
/// arrived, `disorder` what arrived out of order or twice, `errors` error stanzas.
///
/// With `--server-pid`, the server's CPU time (user + system, from /proc) is read around each
/// phase (→ CPU seconds per 10,000 delivered messages), and its RSS before the logins, after
/// them and after the last phase (→ bytes per connected session).
///
/// With `--sm`, every client enables XEP-0198 once logged in, as mobile clients do: it answers
/// the server's `<r/>` with the number of stanzas it received, and asks for an acknowledgement
/// (`<r/>`) after every message it sends. A server that acknowledges only what it stored then
/// holds each stream until the message's storage commits.
///
/// With `--latency-log FILE`, every delivered message is also written there, one line each:
/// phase, pair, sending side, send time and latency (ns, this process's monotonic clock), to
/// tell stalls of everybody at once from streams that wait longer than the others.
///
/// Both clients of a pair live on the same event loop, so the receiver's bookkeeping and the
/// sender's next message need no locks or thread hops.
enum MessageBenchmark: Benchmark {
    static var name: String { "messages" }
    static var summary: String {
        "N pairs exchange chat messages: --port P [--peer-port P2] --pairs N [--seconds T] [--window W] [--rate R] [--phases throughput,rate] [--sm] [--server-pid PID] [--websocket PATH]"
    }

    static func run(arguments: [String]) throws {
        let options = try BenchOptions(
            arguments,
            valueOptions: [
                "--host", "--port", "--domain", "--pairs", "--first-user", "--prefix", "--password", "--threads",
                "--sources", "--seconds", "--warmup", "--window", "--rate", "--phases", "--server-pid", "--label",
                "--body-bytes", "--peer-port", "--websocket", "--latency-log",
            ], flagOptions: ["--sm"])
        let pairs = max(1, try options.int("--pairs", default: 100))
        let settings = LoginBenchmark.Settings(
            host: try options.string("--host", default: "127.0.0.1"),
            port: try options.int("--port"),
            domain: try options.string("--domain", default: "localhost"),
            users: 2 * pairs,
            firstUser: try options.int("--first-user", default: 1),
            prefix: try options.string("--prefix", default: "user"),
            password: try options.string("--password", default: "benchpass"),
            concurrency: 2 * pairs,
            sources: max(1, min(250, try options.int("--sources", default: 1))),
            hold: true,
            webSocketPath: options.optionalString("--websocket"))
        let seconds = Double(try options.string("--seconds", default: "10")) ?? 10
        let warmup = Double(try options.string("--warmup", default: "1")) ?? 1
        let window = max(1, try options.int("--window", default: 4))
        let rate = max(1, try options.int("--rate", default: 2000))
        let bodyBytes = try options.int("--body-bytes", default: 100)
        let phases = try options.string("--phases", default: "throughput,rate").split(separator: ",").map(String.init)
        for phase in phases where phase != "throughput" && phase != "rate" {
            throw UsageError(description: "unknown phase '\(phase)' (throughput, rate)")
        }
        let threads = max(1, try options.int("--threads", default: System.coreCount))
        let label = try options.string("--label", default: "\(settings.host):\(settings.port)")
        let server = try options.optionalString("--server-pid").map { text -> ServerProcess in
            guard let pid = Int(text) else { throw UsageError(description: "--server-pid must be a process id") }
            return ServerProcess(pid: pid)
        }
        _ = LoginBenchmark.raiseFileLimit()

        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        let rssBase = server?.rssKiB()
        let run = MessageRun(
            settings: settings, pairs: pairs, bodyBytes: bodyBytes, streamManagement: options.flag("--sm"), group: group,
            peerPort: try options.optionalString("--peer-port").flatMap(Int.init))
        let loginFailures = run.logIn(timeout: 60)
        guard loginFailures.isEmpty else {
            for (reason, count) in loginFailures.sorted(by: { $0.value > $1.value }).prefix(5) {
                say("\(label): login failed \(count)×: \(reason)")
            }
            exit(1)
        }
        let rssLoggedIn = server?.rssKiB()
        say("\(label): \(2 * pairs) sessions logged in (\(pairs) pairs, \(threads) client threads)")

        let latencyLog = try options.optionalString("--latency-log").map { path -> FileHandle in
            guard FileManager.default.createFile(atPath: path, contents: nil), let handle = FileHandle(forWritingAtPath: path) else {
                throw UsageError(description: "cannot write \(path)")
            }
            return handle
        }
        var healthy = true
        if warmup > 0 {
            let result = run.phase(.throughput(window: window), seconds: warmup, server: server)
            say("\(label) warm-up: \(result.delivered) messages, \(format(result.rate, 0))/s, lost \(result.lost), disorder \(result.disorder), errors \(result.errors)")
            healthy = healthy && result.clean
        }
        for phase in phases {
            let mode: MessageRun.Mode = phase == "rate" ? .rate(perSecond: rate) : .throughput(window: window)
            let result = run.phase(mode, seconds: seconds, server: server)
            if let latencyLog {
                // Wall and monotonic clocks now, to line the samples up with a server's log.
                var text = "# \(phase) wall_s=\(Date().timeIntervalSince1970) mono_ns=\(NIODeadline.now().uptimeNanoseconds)\n"
                for sample in result.log {
                    text += "\(phase) \(sample.pair) \(sample.side) \(sample.sent) \(sample.latency)\n"
                }
                latencyLog.write(Data(text.utf8))
            }
            healthy = healthy && result.clean
            let what = phase == "rate" ? "rate \(rate)/s" : "throughput, window \(window)/direction"
            say(
                "\(label) \(what): \(result.delivered)/\(result.sent) delivered in \(format(result.seconds, 2)) s = "
                    + "\(format(result.rate, 0)) msg/s, latency p50 \(format(result.latency.p50, 3)) ms, "
                    + "p99 \(format(result.latency.p99, 3)) ms, max \(format(result.latency.max, 3)) ms; "
                    + "lost \(result.lost), disorder \(result.disorder), errors \(result.errors)"
                    + (result.cpuSeconds.map { ", server CPU \(format($0, 3)) s = \(format(result.cpuPer10k, 3)) s/10k msgs" } ?? ""))
            say(
                "RESULT label=\(label) phase=\(phase) sent=\(result.sent) delivered=\(result.delivered) "
                    + "seconds=\(format(result.seconds, 3)) rate=\(format(result.rate, 1)) "
                    + "p50_ms=\(format(result.latency.p50, 3)) p99_ms=\(format(result.latency.p99, 3)) "
                    + "max_ms=\(format(result.latency.max, 3)) lost=\(result.lost) disorder=\(result.disorder) "
                    + "errors=\(result.errors) cpu_s=\(format(result.cpuSeconds ?? 0, 3)) "
                    + "cpu_s_per_10k=\(format(result.cpuPer10k, 4))")
        }
        if let server, let rssBase, let rssLoggedIn, let rssEnd = server.rssKiB() {
            let perSession = Double(rssEnd - rssBase) * 1024 / Double(2 * pairs)
            say(
                "\(label): RSS \(rssBase) KiB before the logins, \(rssLoggedIn) KiB after, \(rssEnd) KiB after the "
                    + "phases -> \(format(perSession, 0)) bytes per connected session")
            say(
                "RESULT label=\(label) phase=memory sessions=\(2 * pairs) rss_base_kib=\(rssBase) "
                    + "rss_login_kib=\(rssLoggedIn) rss_end_kib=\(rssEnd) bytes_per_session=\(format(perSession, 0))")
        }
        exit(healthy ? 0 : 1)
    }
}

/// The run: 2N logged-in clients, grouped in pairs that share an event loop.
final class MessageRun: Sendable {
    enum Mode: Sendable {
        case throughput(window: Int)
        case rate(perSecond: Int)
    }

    struct PhaseResult {
        var sent = 0
        var delivered = 0
        var lost = 0
        var disorder = 0
        var errors = 0
        var seconds = 0.0
        var latency = LatencySummary([])
        var cpuSeconds: Double?
        /// Every delivery: pair, sending side, send time, latency (ns).
        var log: [(pair: Int, side: Int, sent: UInt64, latency: Int64)] = []

        var rate: Double { seconds > 0 ? Double(delivered) / seconds : 0 }
        var cpuPer10k: Double { delivered > 0 ? (cpuSeconds ?? 0) * 10_000 / Double(delivered) : 0 }
        var clean: Bool { lost == 0 && disorder == 0 && errors == 0 }
    }

    let settings: LoginBenchmark.Settings
    let pairs: [MessagePair]
    let group: MultiThreadedEventLoopGroup
    let keys = SCRAMKeyCache()

    let streamManagement: Bool
    /// With a cluster: the second client of every pair logs in at this port (another node),
    /// so every message crosses between nodes.
    let peerPort: Int?

    init(
        settings: LoginBenchmark.Settings, pairs count: Int, bodyBytes: Int, streamManagement: Bool,
        group: MultiThreadedEventLoopGroup, peerPort: Int? = nil
    ) {
        self.peerPort = peerPort
        self.streamManagement = streamManagement
        self.settings = settings
        self.group = group
        let padding = String(repeating: "x", count: max(0, bodyBytes - 30))
        pairs = (0..<count).map { index in
            let users = [settings.firstUser + 2 * index, settings.firstUser + 2 * index + 1].map {
                "\(settings.prefix)\($0)@\(settings.domain)/bench"
            }
            return MessagePair(loop: group.next(), jids: users, padding: padding, requestAcks: streamManagement)
        }
    }

    /// Logs every client in, at once; returns the failures (none: all are up).
    func logIn(timeout: Double) -> [String: Int] {
        let outcomes = NIOLockedValueBox<(done: Int, failures: [String: Int])>((0, [:]))
        let done = DispatchSemaphore(value: 0)
        let total = 2 * pairs.count
        let record: @Sendable (LoginOutcome) -> Void = { outcome in
            let finished = outcomes.withLockedValue { state -> Bool in
                state.done += 1
                if case .failure(let reason) = outcome { state.failures[reason, default: 0] += 1 }
                return state.done == total
            }
            if finished { done.signal() }
        }
        for (index, pair) in pairs.enumerated() {
            for side in 0..<2 {
                let number = settings.firstUser + 2 * index + side
                var settings = settings
                if side == 1, let peerPort { settings.port = peerPort }
                LoginClient.connect(
                    on: pair.loop, number: number, sourceIndex: 2 * index + side, settings: settings, keys: keys,
                    next: { [streamManagement] in MessageClientHandler(pair: pair, side: side, streamManagement: streamManagement) },
                    finish: record
                ).whenFailure { error in record(.failure("connect: \(error)")) }
            }
        }
        if done.wait(timeout: .now() + timeout) == .timedOut {
            return ["timed out after \(Int(timeout)) s": total - outcomes.withLockedValue { $0.done }]
        }
        return outcomes.withLockedValue { $0.failures }
    }

    /// Runs one phase for `seconds`, then stops sending and waits (up to 10 s) for what is in
    /// flight.
    func phase(_ mode: Mode, seconds: Double, server: ServerProcess?) -> PhaseResult {
        let cpuBefore = server?.cpuSeconds()
        let start = NIODeadline.now() + .milliseconds(5)
        let end = start + .nanoseconds(Int64(seconds * 1e9))
        let directions = 2 * pairs.count
        for (index, pair) in pairs.enumerated() {
            pair.loop.execute {
                switch mode {
                case .throughput(let window):
                    pair.startThroughput(window: window, at: start, until: end)
                case .rate(let perSecond):
                    let interval = Int64(1e9 * Double(directions) / Double(perSecond))
                    let offset = Int64(1e9 / Double(perSecond))
                    for side in 0..<2 {
                        pair.startPaced(
                            side: side, first: start + .nanoseconds(offset * Int64(2 * index + side)),
                            interval: interval, until: end)
                    }
                }
            }
        }
        Thread.sleep(forTimeInterval: max(0, Double((end - NIODeadline.now()).nanoseconds) / 1e9))
        let drainDeadline = NIODeadline.now() + .seconds(10)
        var stats: [MessagePair.Stats] = []
        repeat {
            Thread.sleep(forTimeInterval: 0.01)
            stats = pairs.map { pair in try! pair.loop.submit { pair.stats }.wait() }
        } while NIODeadline.now() < drainDeadline && stats.contains { !$0.settled }
        let cpuAfter = server?.cpuSeconds()

        var result = PhaseResult()
        var samples: [Int64] = []
        var last = start
        for (pairIndex, (pair, stat)) in zip(pairs, stats).enumerated() {
            result.sent += stat.sent
            result.delivered += stat.received
            result.lost += max(0, stat.sent - stat.received)
            result.disorder += stat.disorder
            result.errors += stat.errors
            last = max(last, stat.lastReceived)
            let (latencies, senders) = try! pair.loop.submit { pair.takeLatencies() }.wait()
            samples += latencies
            for (latency, sender) in zip(latencies, senders) {
                result.log.append((pairIndex, sender.side, sender.sent, latency))
            }
        }
        result.seconds = Double((last - start).nanoseconds) / 1e9
        result.latency = LatencySummary(samples)
        if let cpuBefore, let cpuAfter { result.cpuSeconds = cpuAfter - cpuBefore }
        for pair in pairs { try! pair.loop.submit { pair.resetPhase() }.wait() }
        return result
    }
}

/// Two clients that message each other, and everything about their traffic. Confined to
/// `loop` (both channels are on it): every method must run there.
final class MessagePair: @unchecked Sendable {
    struct Stats: Sendable {
        var sent = 0
        var received = 0
        var disorder = 0
        var errors = 0
        var lastReceived = NIODeadline.uptimeNanoseconds(0)
        var settled: Bool { received >= sent }
    }

    let loop: any EventLoop
    /// Full JIDs of side 0 and side 1.
    let jids: [String]
    let padding: String
    /// XEP-0198: `<r/>` after every message.
    let requestAcks: Bool
    var contexts: [ChannelHandlerContext?] = [nil, nil]
    /// Per direction, indexed by the sending side: the next sequence number to send, the next
    /// one expected at the receiver.
    private var nextSequence = [0, 0]
    private var expected = [0, 0]
    private(set) var stats = Stats()
    private var latencies: [Int64] = []
    /// Per latency: the side that sent it and when (ns).
    private var senders: [(side: Int, sent: UInt64)] = []
    private var sending = false
    private var phaseEnd = NIODeadline.now()

    init(loop: any EventLoop, jids: [String], padding: String, requestAcks: Bool) {
        self.loop = loop
        self.jids = jids
        self.padding = padding
        self.requestAcks = requestAcks
    }

    func startThroughput(window: Int, at start: NIODeadline, until end: NIODeadline) {
        phaseEnd = end
        sending = true
        loop.scheduleTask(deadline: start) { [self] in
            for _ in 0..<window {
                send(from: 0)
                send(from: 1)
            }
        }
    }

    func startPaced(side: Int, first: NIODeadline, interval: Int64, until end: NIODeadline) {
        phaseEnd = end
        @Sendable func tick(_ deadline: NIODeadline) {
            guard deadline < end else { return }
            loop.scheduleTask(deadline: deadline) { [self] in
                send(from: side)
                tick(deadline + .nanoseconds(interval))
            }
        }
        tick(first)
    }

    private func send(from side: Int) {
        guard let context = contexts[side] else { return }
        let sequence = nextSequence[side]
        nextSequence[side] += 1
        stats.sent += 1
        let now = NIODeadline.now().uptimeNanoseconds
        let text =
            "<message to='\(jids[1 - side])' type='chat' id='m\(sequence)'><body>\(sequence) \(now) \(padding)</body></message>"
            + (requestAcks ? "<r xmlns='urn:xmpp:sm:3'/>" : "")
        context.writeAndFlush(NIOAny(context.channel.allocator.buffer(string: text)), promise: nil)
    }

    /// A message arrived at `side`, so it was sent by the other one.
    func received(_ message: XMLElement, at side: Int) {
        let now = NIODeadline.now()
        if message.type == "error" {
            stats.errors += 1
            return
        }
        guard let body = message.firstChild("body")?.text else { return }
        let fields = body.split(separator: " ", maxSplits: 2)
        guard fields.count >= 2, let sequence = Int(fields[0]), let sent = UInt64(fields[1]) else { return }
        let sender = 1 - side
        if sequence != expected[sender] { stats.disorder += 1 }
        expected[sender] = max(expected[sender], sequence + 1)
        stats.received += 1
        stats.lastReceived = now
        latencies.append(Int64(now.uptimeNanoseconds &- sent))
        senders.append((sender, sent))
        if sending {
            if now < phaseEnd {
                send(from: sender)
            } else {
                sending = false
            }
        }
    }

    func receivedError() { stats.errors += 1 }

    func takeLatencies() -> ([Int64], [(side: Int, sent: UInt64)]) {
        defer {
            latencies = []
            senders = []
        }
        return (latencies, senders)
    }

    func resetPhase() {
        stats = Stats()
        sending = false
    }
}

/// After the login handler: hands messages to the pair, counts errors; with stream
/// management, enables it once logged in and answers the server's `<r/>`.
final class MessageClientHandler: ChannelInboundHandler {
    typealias InboundIn = XMLStreamEvent
    static let sm = "urn:xmpp:sm:3"

    private let pair: MessagePair
    private let side: Int
    private let streamManagement: Bool
    /// XEP-0198 `h`: stanzas received since `<enabled/>`.
    private var handled: UInt32 = 0
    private var managed = false

    init(pair: MessagePair, side: Int, streamManagement: Bool) {
        self.pair = pair
        self.side = side
        self.streamManagement = streamManagement
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if streamManagement, case .loggedIn? = event as? LoginClientHandler.Event {
            let enable = "<enable xmlns='\(Self.sm)'/>"
            context.writeAndFlush(NIOAny(context.channel.allocator.buffer(string: enable)), promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        pair.contexts[side] = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        pair.contexts[side] = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .stanza(let element) = unwrapInboundIn(data) else { return }
        if element.namespace == Self.sm {
            switch element.name {
            case "enabled":
                managed = true
            case "r":
                let answer = "<a xmlns='\(Self.sm)' h='\(handled)'/>"
                context.writeAndFlush(NIOAny(context.channel.allocator.buffer(string: answer)), promise: nil)
            case "failed":
                pair.receivedError()
            default:
                break  // <a/>: the server's acknowledgements, not measured
            }
            return
        }
        if managed { handled &+= 1 }
        switch element.name {
        case "message":
            pair.received(element, at: side)
        case "iq" where element.type == "error":
            pair.receivedError()
        default:
            return  // presence
        }
    }
}
