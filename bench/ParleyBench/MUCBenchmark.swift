import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ParleyCore

#if canImport(Glibc)
import Glibc
#endif

/// `ParleyBench muc`: N accounts log in and enter one room of a multi-user chat service
/// (XEP-0045) as `o0`…`o<N-1>`, and a few of them talk. Standard XMPP only, so it runs
/// unchanged against any server:
/// - `o0` enters first, creating the room, and accepts the default configuration (an instant
///   room, §10.1.2); then the others enter all at once. `join` is the time from those entries
///   to the last self-presence (status 110); afterwards every occupant must see all N.
/// - with `--server-pid`, the server's RSS after the logins and after the entries (each the
///   lowest reading over the second half of `--settle` seconds of quiet, 11 by default: two
///   of parleyd's 5-second memory trims): what an occupant costs beyond its session;
/// - phases: `throughput` (each of S senders keeps W messages that have not come back to it
///   from the room yet, for T seconds) and `rate` (R messages/s in all, evenly paced, for T
///   seconds). After each phase the senders stop and the run waits for what is in flight.
///
/// Each body starts with `<sender slot> <sequence> <send time>`: every occupant (the sender
/// included) must get every message exactly once (`lost`, `dup`); the latency is send to
/// arrival at each occupant; server CPU per delivered message from /proc.
///
/// Exit status: 0 clean, 1 lost/duplicated/refused/incomplete.
enum MUCBenchmark: Benchmark {
    static var name: String { "muc" }
    static var summary: String {
        "N occupants in one room, S senders: --port P --occupants N [--senders S] [--seconds T] [--window W] [--rate R] [--rate-seconds T] [--latency-log FILE] [--server-pid PID]"
    }

    static func run(arguments: [String]) throws {
        let options = try BenchOptions(
            arguments,
            valueOptions: [
                "--host", "--port", "--domain", "--service", "--room", "--occupants", "--senders", "--first-user", "--prefix",
                "--password", "--threads", "--seconds", "--window", "--rate", "--phases", "--server-pid", "--label",
                "--body-bytes", "--settle", "--join-timeout", "--latency-log", "--rate-seconds",
            ])
        let occupants = max(2, try options.int("--occupants", default: 100))
        let settings = LoginBenchmark.Settings(
            host: try options.string("--host", default: "127.0.0.1"),
            port: try options.int("--port"),
            domain: try options.string("--domain", default: "localhost"),
            users: occupants,
            firstUser: try options.int("--first-user", default: 1),
            prefix: try options.string("--prefix", default: "user"),
            password: try options.string("--password", default: "benchpass"),
            concurrency: occupants,
            sources: 1,
            hold: true)
        let service = try options.string("--service", default: "conference.\(settings.domain)")
        let room = try options.string("--room", default: "bench\(occupants)") + "@" + service
        let senders = min(occupants, max(1, try options.int("--senders", default: 4)))
        let seconds = Double(try options.string("--seconds", default: "10")) ?? 10
        let rateSeconds = Double(try options.string("--rate-seconds", default: "\(seconds)")) ?? seconds
        let settle = Double(try options.string("--settle", default: "11")) ?? 11
        let joinTimeout = Double(try options.int("--join-timeout", default: 600))
        let window = max(1, try options.int("--window", default: 2))
        let rate = max(1, try options.int("--rate", default: 20))
        let bodyBytes = try options.int("--body-bytes", default: 100)
        let phases = try options.string("--phases", default: "throughput,rate").split(separator: ",").map(String.init)
        let latencyLog = try options.optionalString("--latency-log")
        for phase in phases where phase != "throughput" && phase != "rate" {
            throw UsageError(description: "unknown phase '\(phase)' (throughput, rate)")
        }
        let threads = max(1, try options.int("--threads", default: System.coreCount))
        let label = try options.string("--label", default: "\(settings.host):\(settings.port)")
        let server = try options.optionalString("--server-pid").map { text -> ServerProcess in
            guard let pid = Int(text) else { throw UsageError(description: "--server-pid takes a process id") }
            return ServerProcess(pid: pid)
        }
        _ = LoginBenchmark.raiseFileLimit()

        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        let run = MUCRun(
            settings: settings, room: room, senders: senders, body: String(repeating: "x", count: bodyBytes), group: group)
        let loginFailures = run.logIn(timeout: 300)
        guard loginFailures.isEmpty else {
            for (reason, count) in loginFailures.sorted(by: { $0.value > $1.value }).prefix(5) {
                say("\(label): login failed \(count)×: \(reason)")
            }
            exit(1)
        }
        let settledLoggedIn = server.flatMap { settledRSS($0, seconds: settle) }
        let join = run.join(timeout: joinTimeout, server: server)
        let settledJoined = server.flatMap { settledRSS($0, seconds: settle) }
        let rssLoggedIn = settledLoggedIn?.rss
        let rssJoined = settledJoined?.rss
        var healthy = join.clean
        let perOccupant = rssLoggedIn.flatMap { before in rssJoined.map { Double($0 - before) / Double(occupants) } }
        let anonymousPerOccupant = settledLoggedIn?.anonymous.flatMap { before in
            settledJoined?.anonymous.map { Double($0 - before) / Double(occupants) }
        }
        say(
            "\(label): \(occupants) occupants entered \(room) in \(format(join.seconds, 3)) s "
                + "(\(join.joined) self-presences, \(join.complete) occupants see all \(occupants), errors \(join.errors)"
                + (join.firstError.map { ": \($0)" } ?? "") + ")"
                + (join.cpuSeconds.map { ", server CPU \(format($0, 3)) s" } ?? "")
                + ", load generator CPU \(format(join.clientCPUSeconds, 3)) s"
                + (perOccupant.map {
                    "; server RSS \(rssLoggedIn ?? 0) KiB logged in, \(rssJoined ?? 0) KiB in the room = \(format($0, 1)) KiB/occupant"
                } ?? "")
                + (anonymousPerOccupant.map { " (anonymous memory only: \(format($0, 1)) KiB/occupant)" } ?? ""))
        say(
            "RESULT label=\(label) phase=join occupants=\(occupants) seconds=\(format(join.seconds, 3)) joined=\(join.joined) "
                + "complete=\(join.complete) errors=\(join.errors) cpu_s=\(format(join.cpuSeconds ?? 0, 3)) "
                + "client_cpu_s=\(format(join.clientCPUSeconds, 3)) rss_login_kib=\(rssLoggedIn ?? 0) "
                + "rss_joined_kib=\(rssJoined ?? 0) kib_per_occupant=\(format(perOccupant ?? 0, 2)) "
                + "anon_kib_per_occupant=\(format(anonymousPerOccupant ?? 0, 2))")
        guard join.joined == occupants else { exit(1) }

        for phase in phases {
            let mode: MUCRun.Mode = phase == "rate" ? .paced(perSecond: rate) : .window(window)
            let result = run.phase(mode, seconds: phase == "rate" ? rateSeconds : seconds, server: server)
            healthy = healthy && result.clean
            if let latencyLog, phase == "rate" { writeLatencyLog(result.perMessage, to: latencyLog, rate: rate, senders: senders) }
            let what = phase == "rate" ? "rate \(rate) messages/s" : "throughput, \(senders) senders × window \(window)"
            say(
                "\(label) \(what): \(result.sent) sent (\(format(result.messageRate, 1))/s), "
                    + "\(result.delivered)/\(result.expected) deliveries in \(format(result.seconds, 2)) s = "
                    + "\(format(result.rate, 0))/s, latency p50 \(format(result.latency.p50, 3)) ms, "
                    + "p99 \(format(result.latency.p99, 3)) ms, max \(format(result.latency.max, 3)) ms "
                    + "(per message: first copy p50 \(format(result.firstArrival.p50, 3)) ms, last copy p50 "
                    + "\(format(result.lastArrival.p50, 3)) p99 \(format(result.lastArrival.p99, 3)) ms); lost \(result.lost), "
                    + "dup \(result.duplicates), stray \(result.stray), errors \(result.errors)"
                    + (result.firstError.map { " (\($0))" } ?? "")
                    + (result.cpuSeconds.map { ", server CPU \(format($0, 3)) s = \(format(result.cpuMicroseconds, 2)) µs/delivery" }
                        ?? "")
                    + " (load generator \(format(result.clientCPUMicroseconds, 2)) µs/delivery)")
            say(
                "RESULT label=\(label) phase=\(phase) occupants=\(occupants) sent=\(result.sent) delivered=\(result.delivered) "
                    + "expected=\(result.expected) seconds=\(format(result.seconds, 3)) rate=\(format(result.rate, 1)) "
                    + "message_rate=\(format(result.messageRate, 1)) p50_ms=\(format(result.latency.p50, 3)) "
                    + "p99_ms=\(format(result.latency.p99, 3)) max_ms=\(format(result.latency.max, 3)) lost=\(result.lost) "
                    + "dup=\(result.duplicates) stray=\(result.stray) errors=\(result.errors) "
                    + "cpu_s=\(format(result.cpuSeconds ?? 0, 3)) cpu_us=\(format(result.cpuMicroseconds, 2)) "
                    + "client_cpu_us=\(format(result.clientCPUMicroseconds, 2))")
        }
        exit(healthy ? 0 : 1)
    }
}

/// Appends the rate phase's messages to `path`, in the order they were sent: when (ms after
/// the phase began, from the pacing), the first copy's and the last copy's latency (ms). A
/// p99 over a few hundred messages is its few slowest; this shows whether they come together,
/// at a period (a timer), or alone.
func writeLatencyLog(_ perMessage: [Int: (first: Int64, last: Int64)], to path: String, rate: Int, senders: Int) {
    let interval = 1e3 / Double(rate)
    let rows = perMessage.map { key, spread in
        let (slot, index) = MUCBenchOccupant.slotAndIndex(of: key)
        return (sentMs: interval * Double(slot) + interval * Double(senders) * Double(index), spread: spread)
    }.sorted { $0.sentMs < $1.sentMs }
    var text = ""
    for row in rows {
        text += "\(format(row.sentMs, 1)) \(format(Double(row.spread.first) / 1e6, 3)) \(format(Double(row.spread.last) / 1e6, 3))\n"
    }
    if !FileManager.default.fileExists(atPath: path) { FileManager.default.createFile(atPath: path, contents: nil) }
    guard let handle = FileHandle(forWritingAtPath: path) else { return say("cannot write \(path)") }
    handle.seekToEndOfFile()
    handle.write(Data(text.utf8))
    try? handle.close()
}

/// The server's RSS after `seconds` of quiet: the smallest of the readings taken every half
/// second over the second half. One reading at the end was what the heap happened to hold at
/// that instant (parleyd hands freed memory back every 5 s, the others when their collectors
/// run), and moved the figure per occupant by tens of KiB between runs of one binary. The
/// anonymous part (RssAnon) the same way: the rest of the RSS is code and data of the
/// executable and its libraries, paged in by first use and out by other processes' demand
/// on a shared machine, which moved the difference by megabytes either way.
func settledRSS(_ server: ServerProcess, seconds: Double) -> (rss: Int, anonymous: Int?)? {
    let start = Date()
    var lowest: Int?
    var lowestAnonymous: Int?
    while true {
        let elapsed = Date().timeIntervalSince(start)
        if elapsed >= seconds / 2 {
            if let rss = server.rssKiB() { lowest = min(lowest ?? rss, rss) }
            if let anonymous = server.anonymousRSSKiB() { lowestAnonymous = min(lowestAnonymous ?? anonymous, anonymous) }
        }
        if elapsed >= seconds {
            guard let rss = lowest ?? server.rssKiB() else { return nil }
            return (rss, lowestAnonymous)
        }
        Thread.sleep(forTimeInterval: min(0.5, max(0.01, seconds - elapsed)))
    }
}

/// The run: N occupants spread over the event loops; the first `senders` of them talk.
final class MUCRun: Sendable {
    enum Mode {
        case window(Int)
        case paced(perSecond: Int)
    }

    struct JoinResult {
        var seconds = 0.0
        var joined = 0
        var complete = 0
        var errors = 0
        var firstError: String?
        var cpuSeconds: Double?
        var clientCPUSeconds = 0.0
        var clean: Bool { errors == 0 && complete == joined }
    }

    struct PhaseResult {
        var sent = 0
        var delivered = 0
        var expected = 0
        var lost = 0
        var duplicates = 0
        var stray = 0
        var errors = 0
        var firstError: String?
        var seconds = 0.0
        var messageRate = 0.0
        var latency = LatencySummary([])
        /// Per message: when its first copy arrived, and its last (the whole fan-out).
        var firstArrival = LatencySummary([])
        var lastArrival = LatencySummary([])
        /// Per message (the sender's slot and its index in the phase): its first and last copy's latency.
        var perMessage: [Int: (first: Int64, last: Int64)] = [:]
        var cpuSeconds: Double?
        var clientCPUSeconds = 0.0

        var rate: Double { seconds > 0 ? Double(delivered) / seconds : 0 }
        var cpuMicroseconds: Double { delivered > 0 ? (cpuSeconds ?? 0) * 1e6 / Double(delivered) : 0 }
        var clientCPUMicroseconds: Double { delivered > 0 ? clientCPUSeconds * 1e6 / Double(delivered) : 0 }
        var clean: Bool { lost == 0 && duplicates == 0 && stray == 0 && errors == 0 }
    }

    let settings: LoginBenchmark.Settings
    let occupants: [MUCBenchOccupant]
    let keys = SCRAMKeyCache()
    let progress = MUCProgress()

    init(settings: LoginBenchmark.Settings, room: String, senders: Int, body: String, group: MultiThreadedEventLoopGroup) {
        self.settings = settings
        let progress = self.progress
        occupants = (0..<settings.users).map { index in
            MUCBenchOccupant(
                loop: group.next(), index: index, occupants: settings.users, room: room, senderSlot: index < senders ? index : nil,
                senders: senders, body: body, progress: progress)
        }
    }

    private var senders: [MUCBenchOccupant] { occupants.filter { $0.senderSlot != nil } }

    /// Logs every client in, `wave` at a time (ejabberd resets some of a thousand connections
    /// opened at once on a busy machine); returns the failures (none: all are up).
    func logIn(timeout: Double, wave: Int = 100) -> [String: Int] {
        let deadline = NIODeadline.now() + .nanoseconds(Int64(timeout * 1e9))
        var failures: [String: Int] = [:]
        for start in stride(from: 0, to: occupants.count, by: wave) {
            let left = Double((deadline - NIODeadline.now()).nanoseconds) / 1e9
            for (reason, count) in logIn(Array(occupants[start..<min(occupants.count, start + wave)]), timeout: left) {
                failures[reason, default: 0] += count
            }
            if !failures.isEmpty { break }
        }
        return failures
    }

    private func logIn(_ occupants: [MUCBenchOccupant], timeout: Double) -> [String: Int] {
        let outcomes = NIOLockedValueBox<(done: Int, failures: [String: Int])>((0, [:]))
        let done = DispatchSemaphore(value: 0)
        let total = occupants.count
        let record: @Sendable (LoginOutcome) -> Void = { outcome in
            let finished = outcomes.withLockedValue { state -> Bool in
                state.done += 1
                if case .failure(let reason) = outcome { state.failures[reason, default: 0] += 1 }
                return state.done == total
            }
            if finished { done.signal() }
        }
        for occupant in occupants {
            LoginClient.connect(
                on: occupant.loop, number: settings.firstUser + occupant.index, sourceIndex: occupant.index, settings: settings,
                keys: keys,
                first: {
                    let skimmer = MUCStanzaSkimmer { occupant.skimmed($0) }
                    occupant.skimmer = skimmer
                    return skimmer
                }, next: { MUCClientHandler(occupant) }, finish: record
            ).whenFailure { error in record(.failure("connect: \(error)")) }
        }
        if done.wait(timeout: .now() + timeout) == .timedOut {
            return ["timed out after \(Int(timeout)) s": total - outcomes.withLockedValue { $0.done }]
        }
        return outcomes.withLockedValue { $0.failures }
    }

    /// The creator enters and configures an instant room (not timed); then everyone else enters
    /// at once, timed to the last self-presence. Then waits (up to 30 s) until every occupant
    /// sees all the others.
    func join(timeout: Double, server: ServerProcess?) -> JoinResult {
        var result = JoinResult()
        let creator = occupants[0]
        creator.loop.execute { creator.join() }
        guard wait(timeout: 30, until: { try! creator.loop.submit { creator.joinedAt != nil }.wait() }) else {
            result.errors = errors().count
            result.firstError = errors().first ?? "the creator got no self-presence within 30 s"
            return result
        }
        if try! creator.loop.submit({ creator.created }).wait() {
            creator.loop.execute { creator.configureInstantRoom() }
            guard wait(timeout: 30, until: { try! creator.loop.submit { creator.configured != nil }.wait() }),
                try! creator.loop.submit({ creator.configured }).wait() == true
            else {
                result.errors = 1
                result.firstError = errors().first ?? "the instant room was not configured within 30 s"
                return result
            }
        }
        let cpuBefore = server?.cpuSeconds()
        let clientBefore = ServerProcess(pid: Int(getpid())).cpuSeconds() ?? 0
        let start = NIODeadline.now()
        for occupant in occupants.dropFirst() { occupant.loop.execute { occupant.join() } }
        // Errors are looked for only now and then: each look visits every event loop.
        var polls = 0
        _ = wait(timeout: timeout, poll: 0.002) {
            polls += 1
            return self.progress.joined == self.occupants.count || (polls % 500 == 0 && !self.errors().isEmpty)
        }
        let joinedAt = occupants.map { occupant in try! occupant.loop.submit { occupant.joinedAt }.wait() }
        let last = joinedAt.compactMap { $0 }.max() ?? start
        result.joined = joinedAt.compactMap { $0 }.count
        result.seconds = Double((last - start).nanoseconds) / 1e9
        if let cpuBefore, let cpuAfter = server?.cpuSeconds() { result.cpuSeconds = cpuAfter - cpuBefore }
        result.clientCPUSeconds = (ServerProcess(pid: Int(getpid())).cpuSeconds() ?? 0) - clientBefore
        let everyone = occupants.count
        _ = wait(timeout: 30) { self.completeCount(of: everyone) == everyone }
        result.complete = completeCount(of: everyone)
        let errors = errors()
        result.errors = errors.count
        result.firstError = errors.first
        return result
    }

    private func completeCount(of everyone: Int) -> Int {
        occupants.filter { occupant in try! occupant.loop.submit { occupant.presentCount == everyone }.wait() }.count
    }

    private func errors() -> [String] {
        occupants.compactMap { occupant in try! occupant.loop.submit { occupant.stats.firstError }.wait() }
    }

    private func wait(timeout: Double, poll: Double = 0.02, until done: () -> Bool) -> Bool {
        let deadline = NIODeadline.now() + .nanoseconds(Int64(timeout * 1e9))
        while NIODeadline.now() < deadline {
            if done() { return true }
            Thread.sleep(forTimeInterval: poll)
        }
        return done()
    }

    /// Runs one phase for `seconds`, then stops sending and waits (up to 60 s) until every
    /// occupant has every message sent.
    func phase(_ mode: Mode, seconds: Double, server: ServerProcess?) -> PhaseResult {
        let senders = self.senders
        let bases = senders.map { sender in try! sender.loop.submit { sender.sequenceBase }.wait() }
        for occupant in occupants { try! occupant.loop.submit { occupant.beginPhase(bases: bases) }.wait() }
        progress.resetArrivals()
        let cpuBefore = server?.cpuSeconds()
        let clientBefore = ServerProcess(pid: Int(getpid())).cpuSeconds() ?? 0
        let start = NIODeadline.now() + .milliseconds(5)
        let end = start + .nanoseconds(Int64(seconds * 1e9))
        for (slot, sender) in senders.enumerated() {
            sender.loop.execute {
                switch mode {
                case .window(let window):
                    sender.startWindow(window, at: start, until: end)
                case .paced(let perSecond):
                    let interval = Int64(1e9 / Double(perSecond))
                    sender.startPaced(
                        first: start + .nanoseconds(interval * Int64(slot)), interval: interval * Int64(senders.count), until: end)
                }
            }
        }
        Thread.sleep(forTimeInterval: max(0, Double((end - NIODeadline.now()).nanoseconds) / 1e9))
        let drainDeadline = NIODeadline.now() + .seconds(60)
        var sent: [MUCBenchOccupant.Sent] = []
        var stats: [MUCBenchOccupant.Stats] = []
        repeat {
            Thread.sleep(forTimeInterval: 0.002)
            sent = senders.map { sender in try! sender.loop.submit { sender.sent }.wait() }
        } while NIODeadline.now() < drainDeadline && progress.arrived < sent.reduce(0) { $0 + $1.sent } * occupants.count
        stats = occupants.map { occupant in try! occupant.loop.submit { occupant.stats }.wait() }
        let cpuAfter = server?.cpuSeconds()
        let drainEnd = NIODeadline.now()
        var result = PhaseResult()
        result.clientCPUSeconds = (ServerProcess(pid: Int(getpid())).cpuSeconds() ?? 0) - clientBefore
        result.sent = sent.reduce(0) { $0 + $1.sent }
        result.expected = result.sent * occupants.count
        var samples: [Int64] = []
        var spread: [Int: (first: Int64, last: Int64)] = [:]
        var last = start
        for (occupant, stat) in zip(occupants, stats) {
            let seen = try! occupant.loop.submit { occupant.seen }.wait()
            result.delivered += stat.received
            result.duplicates += stat.duplicates
            result.stray += stat.stray
            result.errors += stat.errors
            if result.firstError == nil { result.firstError = stat.firstError }
            for (slot, count) in sent.map(\.sent).enumerated() {
                let got = slot < seen.count ? seen[slot] : []
                result.lost += (0..<count).filter { $0 >= got.count || !got[$0] }.count
            }
            last = max(last, stat.lastReceived)
            let taken = try! occupant.loop.submit { occupant.takeLatencies() }.wait()
            samples += taken.latencies
            for (latency, message) in zip(taken.latencies, taken.messages) {
                let known = spread[message] ?? (latency, latency)
                spread[message] = (min(known.first, latency), max(known.last, latency))
            }
        }
        result.perMessage = spread
        result.firstArrival = LatencySummary(spread.values.map(\.first))
        result.lastArrival = LatencySummary(spread.values.map(\.last))
        result.seconds = Double(((result.delivered > 0 ? last : drainEnd) - start).nanoseconds) / 1e9
        result.messageRate = result.seconds > 0 ? Double(result.sent) / result.seconds : 0
        result.latency = LatencySummary(samples)
        if let cpuBefore, let cpuAfter { result.cpuSeconds = cpuAfter - cpuBefore }
        return result
    }
}
