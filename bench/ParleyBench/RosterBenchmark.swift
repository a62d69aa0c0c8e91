import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ParleyCore

#if canImport(Glibc)
import Glibc
#endif

/// `ParleyBench roster`: presence subscription handshakes (RFC 6121 §3) between N pairs of
/// accounts that start as strangers. Standard XMPP only, so it runs unchanged against any
/// server:
/// - all 2N clients log in (100 at a time), ask for their roster (so they get roster pushes)
///   and send initial presence; none of this is timed;
/// - a handshake: A sends `subscribe` to B; B approves (`subscribed`) and asks back
///   (`subscribe`) in one write; A approves. It is done when both rosters say
///   subscription='both' (roster pushes) and each side got the other's available presence;
/// - W handshakes run at any time (closed loop: a finished one starts the next pair), until
///   all N are done → handshakes/s, p50/p99 of one handshake, and with `--server-pid` the
///   server's CPU (user + system of those processes, from /proc) per handshake.
///
/// The accounts must have empty rosters: a second run on the same accounts measures nothing
/// (give it other accounts with `--first-user`).
///
/// Exit status: 0 every handshake done without an error, 1 otherwise.
enum RosterBenchmark: Benchmark {
    static var name: String { "roster" }
    static var summary: String {
        "subscription handshakes between N pairs: --port P --pairs N [--window W] [--server-pid PID,…]"
    }

    static func run(arguments: [String]) throws {
        let options = try BenchOptions(
            arguments,
            valueOptions: [
                "--host", "--port", "--domain", "--pairs", "--first-user", "--prefix", "--password", "--threads",
                "--window", "--server-pid", "--label", "--timeout",
            ])
        let pairs = max(1, try options.int("--pairs", default: 1000))
        let settings = LoginBenchmark.Settings(
            host: try options.string("--host", default: "127.0.0.1"),
            port: try options.int("--port"),
            domain: try options.string("--domain", default: "localhost"),
            users: 2 * pairs,
            firstUser: try options.int("--first-user", default: 1),
            prefix: try options.string("--prefix", default: "user"),
            password: try options.string("--password", default: "benchpass"),
            concurrency: 2 * pairs,
            sources: 1,
            hold: true,
            initialStanzas: "<iq type='get' id='roster'><query xmlns='\(XMLNamespace.roster)'/></iq><presence/>")
        let window = max(1, try options.int("--window", default: 50))
        let threads = max(1, try options.int("--threads", default: System.coreCount))
        let timeout = Double(try options.int("--timeout", default: 300))
        let label = try options.string("--label", default: "\(settings.host):\(settings.port)")
        let server = try options.optionalString("--server-pid").map { text -> [ServerProcess] in
            try text.split(separator: ",").map { part in
                guard let pid = Int(part) else { throw UsageError(description: "--server-pid takes process ids") }
                return ServerProcess(pid: pid)
            }
        }
        _ = LoginBenchmark.raiseFileLimit()

        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        let run = RosterRun(settings: settings, pairs: pairs, group: group)
        let loginFailures = run.logIn(timeout: timeout)
        guard loginFailures.isEmpty else {
            for (reason, count) in loginFailures.sorted(by: { $0.value > $1.value }).prefix(5) {
                say("\(label): login failed \(count)×: \(reason)")
            }
            exit(1)
        }
        // The logins' presence and roster traffic is over before the clock starts.
        Thread.sleep(forTimeInterval: 1)
        let result = run.handshakes(window: window, timeout: timeout, server: server)
        say(
            "\(label): \(result.done)/\(pairs) handshakes in \(format(result.seconds, 2)) s = "
                + "\(format(result.rate, 1))/s (window \(window)), p50 \(format(result.latency.p50, 2)) ms, "
                + "p99 \(format(result.latency.p99, 2)) ms; errors \(result.errors), unexpected \(result.unexpected)"
                + (result.firstError.map { " (\($0))" } ?? "")
                + (result.cpuSeconds.map {
                    ", server CPU \(format($0, 3)) s = \(format(result.cpuMicroseconds, 0)) µs/handshake"
                } ?? "")
                + " (load generator \(format(result.clientCPUMicroseconds, 0)) µs/handshake)")
        say(
            "RESULT label=\(label) pairs=\(pairs) done=\(result.done) seconds=\(format(result.seconds, 3)) "
                + "rate=\(format(result.rate, 1)) p50_ms=\(format(result.latency.p50, 3)) "
                + "p99_ms=\(format(result.latency.p99, 3)) errors=\(result.errors) unexpected=\(result.unexpected) "
                + "cpu_s=\(format(result.cpuSeconds ?? 0, 3)) cpu_us=\(format(result.cpuMicroseconds, 1)) "
                + "client_cpu_us=\(format(result.clientCPUMicroseconds, 1))")
        exit(result.done == pairs && result.errors == 0 ? 0 : 1)
    }
}

/// The run: N pairs, each peer on one of the event loops.
final class RosterRun: Sendable {
    struct Result {
        var done = 0
        var errors = 0
        var unexpected = 0
        var firstError: String?
        var seconds = 0.0
        var latency = LatencySummary([])
        var cpuSeconds: Double?
        var clientCPUSeconds = 0.0

        var rate: Double { seconds > 0 ? Double(done) / seconds : 0 }
        var cpuMicroseconds: Double { done > 0 ? (cpuSeconds ?? 0) * 1e6 / Double(done) : 0 }
        var clientCPUMicroseconds: Double { done > 0 ? clientCPUSeconds * 1e6 / Double(done) : 0 }
    }

    private struct Progress {
        var next = 0
        var latencies: [Int64] = []
        var last: NIODeadline?
    }

    let settings: LoginBenchmark.Settings
    let group: MultiThreadedEventLoopGroup
    let keys = SCRAMKeyCache()
    private let pairs = NIOLockedValueBox<[RosterPair]>([])
    private let progress = NIOLockedValueBox(Progress())
    private let allDone = DispatchSemaphore(value: 0)

    init(settings: LoginBenchmark.Settings, pairs count: Int, group: MultiThreadedEventLoopGroup) {
        self.settings = settings
        self.group = group
        let jid = { (index: Int) in "\(settings.prefix)\(settings.firstUser + index)@\(settings.domain)" }
        let made = (0..<count).map { index -> RosterPair in
            let initiator = RosterPeer(
                loop: group.next(), bareJID: jid(2 * index), partnerJID: jid(2 * index + 1), isInitiator: true)
            let responder = RosterPeer(
                loop: group.next(), bareJID: jid(2 * index + 1), partnerJID: jid(2 * index), isInitiator: false)
            let pair = RosterPair(initiator: initiator, responder: responder) { [weak self] pair, nanoseconds in
                self?.finished(nanoseconds)
            }
            initiator.pair = pair
            responder.pair = pair
            return pair
        }
        pairs.withLockedValue { $0 = made }
    }

    private var peers: [RosterPeer] {
        pairs.withLockedValue { $0.flatMap { [$0.initiator, $0.responder] } }
    }

    /// Logs every peer in, `wave` at a time; returns the failures (none: all are up).
    func logIn(timeout: Double, wave: Int = 100) -> [String: Int] {
        let peers = self.peers
        let deadline = NIODeadline.now() + .nanoseconds(Int64(timeout * 1e9))
        for start in stride(from: 0, to: peers.count, by: wave) {
            let batch = Array(peers[start..<min(peers.count, start + wave)])
            let outcomes = NIOLockedValueBox<(done: Int, failures: [String: Int])>((0, [:]))
            let done = DispatchSemaphore(value: 0)
            let record: @Sendable (LoginOutcome) -> Void = { outcome in
                let finished = outcomes.withLockedValue { state -> Bool in
                    state.done += 1
                    if case .failure(let reason) = outcome { state.failures[reason, default: 0] += 1 }
                    return state.done == batch.count
                }
                if finished { done.signal() }
            }
            for (offset, peer) in batch.enumerated() {
                LoginClient.connect(
                    on: peer.loop, number: settings.firstUser + start + offset, sourceIndex: start + offset,
                    settings: settings, keys: keys, next: { RosterClientHandler(peer) }, finish: record
                ).whenFailure { error in record(.failure("connect: \(error)")) }
            }
            let left = max(0, (deadline - NIODeadline.now()).nanoseconds)
            if done.wait(timeout: .now() + .nanoseconds(Int(left))) == .timedOut {
                return ["timed out after \(Int(timeout)) s": batch.count - outcomes.withLockedValue { $0.done }]
            }
            let failures = outcomes.withLockedValue { $0.failures }
            if !failures.isEmpty { return failures }
        }
        return [:]
    }

    /// Runs every handshake, `window` at a time, and waits for them (at most `timeout` s).
    func handshakes(window: Int, timeout: Double, server: [ServerProcess]?) -> Result {
        let count = pairs.withLockedValue { $0.count }
        progress.withLockedValue { $0.latencies.reserveCapacity(count) }
        let cpuBefore = server.flatMap(Self.cpuSeconds)
        let clientBefore = ServerProcess(pid: Int(getpid())).cpuSeconds() ?? 0
        let start = NIODeadline.now()
        for _ in 0..<min(window, count) { startNext() }
        let finished = allDone.wait(timeout: .now() + .nanoseconds(Int(timeout * 1e9))) == .success
        let cpuAfter = server.flatMap(Self.cpuSeconds)
        var result = Result()
        result.clientCPUSeconds = (ServerProcess(pid: Int(getpid())).cpuSeconds() ?? 0) - clientBefore
        if let cpuBefore, let cpuAfter { result.cpuSeconds = cpuAfter - cpuBefore }
        let (latencies, last) = progress.withLockedValue { ($0.latencies, $0.last) }
        result.done = latencies.count
        result.latency = LatencySummary(latencies)
        result.seconds = Double(((last ?? .now()) - start).nanoseconds) / 1e9
        for peer in peers {
            let stats = try! peer.loop.submit { peer.stats }.wait()
            result.errors += stats.errors
            result.unexpected += stats.unexpected
            if result.firstError == nil { result.firstError = stats.firstError }
        }
        if !finished {
            let stuck = pairs.withLockedValue { $0 }.first { pair in
                !(try! pair.initiator.loop.submit { pair.initiator.complete }.wait())
                    || !(try! pair.responder.loop.submit { pair.responder.complete }.wait())
            }
            if let stuck {
                let describe = { (peer: RosterPeer) in
                    try! peer.loop.submit {
                        "\(peer.bareJID): subscription \(peer.subscription), presence \(peer.hasPartnerPresence)"
                    }.wait()
                }
                say("timed out; for example \(describe(stuck.initiator)); \(describe(stuck.responder))")
            }
        }
        return result
    }

    private func startNext() {
        let index: Int? = progress.withLockedValue { progress in
            let count = pairs.withLockedValue { $0.count }
            guard progress.next < count else { return nil }
            defer { progress.next += 1 }
            return progress.next
        }
        guard let index else { return }
        pairs.withLockedValue { $0[index] }.start()
    }

    private func finished(_ nanoseconds: Int64) {
        let count = pairs.withLockedValue { $0.count }
        let all = progress.withLockedValue { progress -> Bool in
            progress.latencies.append(nanoseconds)
            progress.last = .now()
            return progress.latencies.count == count
        }
        if all { allDone.signal() } else { startNext() }
    }

    /// Together, the processes of a server that runs as several (none may have ended).
    private static func cpuSeconds(_ processes: [ServerProcess]) -> Double? {
        var total = 0.0
        for process in processes {
            guard let seconds = process.cpuSeconds() else { return nil }
            total += seconds
        }
        return total
    }
}
