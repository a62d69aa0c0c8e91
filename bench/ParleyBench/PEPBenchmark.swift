import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ParleyCore

#if canImport(Glibc)
import Glibc
#endif

/// `ParleyBench pep`: one account (`user<first>`) with N contacts (the next N accounts),
/// all online, publishes to a PEP node (XEP-0163) and the server notifies every contact.
/// Standard XMPP only, so it runs unchanged against any server:
/// - every client logs in like the login benchmark, asks for its roster and sends presence;
///   contacts put XEP-0115 caps in it, with `NODE+notify` among the features and a correct
///   sha-1 `ver`, and answer the server's disco#info to their full JID;
/// - the rosters are made through the protocol: the publisher sends `subscribe` to every
///   contact, which approves and asks back, and the publisher approves; done when every
///   roster push says subscription='both' on both sides. (4N presence stanzas: about a second
///   for 200 contacts on parleyd and ejabberd, some seconds on a busy Prosody, so no server's
///   admin tool is needed and the code is the same for all.) Then each contact sends its caps
///   presence again, and S strangers (not in the roster) send the publisher directed presence
///   with the same caps: they must get nothing (access model `presence`);
/// - phases: warm-up, `throughput` (W publishes unanswered at any time, for T seconds) and
///   `rate` (R publishes/s, evenly paced, for T seconds). After each phase the publisher stops
///   and the run waits for the notifications in flight.
///
/// Each item id is `<sequence>-<send time>`: every contact must get every acknowledged item
/// exactly once (`lost`, `dup`; `leaked` counts notifications at strangers), and the latency
/// is publish to notification. With `--server-pid PID[,PID…]` the server's CPU (user + system
/// of all those processes, from /proc) is read around each phase → µs per notification.
///
/// Exit status: 0 clean, 1 lost/duplicated/leaked/failed, 3 the server refused the first
/// publish (no PEP: `RESULT … phase=unsupported error=…`).
enum PEPBenchmark: Benchmark {
    static var name: String { "pep" }
    static var summary: String {
        "PEP notifications to N contacts: --port P --contacts N [--seconds T] [--window W] [--rate R] [--server-pid PID,…]"
    }

    static let tune = "http://jabber.org/protocol/tune"

    static func run(arguments: [String]) throws {
        let options = try BenchOptions(
            arguments,
            valueOptions: [
                "--host", "--port", "--domain", "--contacts", "--strangers", "--first-user", "--prefix", "--password",
                "--threads", "--seconds", "--warmup", "--window", "--rate", "--phases", "--server-pid", "--label",
                "--node", "--item-bytes", "--settle",
            ])
        let contacts = max(1, try options.int("--contacts", default: 200))
        let strangers = try options.int("--strangers", default: 2)
        let settings = LoginBenchmark.Settings(
            host: try options.string("--host", default: "127.0.0.1"),
            port: try options.int("--port"),
            domain: try options.string("--domain", default: "localhost"),
            users: 1 + contacts + strangers,
            firstUser: try options.int("--first-user", default: 1),
            prefix: try options.string("--prefix", default: "user"),
            password: try options.string("--password", default: "benchpass"),
            concurrency: 1 + contacts + strangers,
            sources: 1,
            hold: true)
        let seconds = Double(try options.string("--seconds", default: "10")) ?? 10
        let warmup = Double(try options.string("--warmup", default: "2")) ?? 2
        let settle = Double(try options.string("--settle", default: "1")) ?? 1
        let window = max(1, try options.int("--window", default: 4))
        let rate = max(1, try options.int("--rate", default: 20))
        let node = try options.string("--node", default: tune)
        let itemBytes = try options.int("--item-bytes", default: 400)
        let phases = try options.string("--phases", default: "throughput,rate").split(separator: ",").map(String.init)
        for phase in phases where phase != "throughput" && phase != "rate" {
            throw UsageError(description: "unknown phase '\(phase)' (throughput, rate)")
        }
        let threads = max(1, try options.int("--threads", default: System.coreCount))
        let label = try options.string("--label", default: "\(settings.host):\(settings.port)")
        let server = try options.optionalString("--server-pid").map { text -> [ServerProcess] in
            try text.split(separator: ",").map { part in
                guard let pid = Int(part) else { throw UsageError(description: "--server-pid takes process ids") }
                return ServerProcess(pid: pid)
            }
        }
        _ = LoginBenchmark.raiseFileLimit()

        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        let run = try PEPRun(
            settings: settings, contacts: contacts, strangers: strangers, node: node,
            payload: tunePayload(node: node, bytes: itemBytes), group: group)
        let loginFailures = run.logIn(timeout: 120)
        guard loginFailures.isEmpty else {
            for (reason, count) in loginFailures.sorted(by: { $0.value > $1.value }).prefix(5) {
                say("\(label): login failed \(count)×: \(reason)")
            }
            exit(1)
        }
        let rosterStart = NIODeadline.now()
        guard run.makeRosters(timeout: 120) else {
            say("\(label): the rosters did not become mutual within 120 s: \(run.rosterProgress())")
            exit(1)
        }
        say(
            "\(label): \(1 + contacts + strangers) sessions logged in, \(contacts) mutual subscriptions made in "
                + "\(format(Double((NIODeadline.now() - rosterStart).nanoseconds) / 1e9, 2)) s, \(strangers) strangers, "
                + "node \(node), \(threads) client threads")
        run.announce(settle: settle)

        var healthy = true
        if warmup > 0 {
            let result = run.phase(.window(window), seconds: warmup, server: server)
            exitIfRefused(result, label: label)
            say(
                "\(label) warm-up: \(result.published) items published, \(result.delivered) notifications, "
                    + "\(result.silentContacts) contacts got none, \(run.discoQueries()) disco#info queries answered")
            healthy = healthy && result.clean
            if result.silentContacts > 0 {
                say("\(label): \(result.silentContacts) of \(contacts) contacts got no notification (caps not honoured?)")
            }
        }
        for phase in phases {
            let mode: PEPRun.Mode = phase == "rate" ? .paced(perSecond: rate) : .window(window)
            let result = run.phase(mode, seconds: seconds, server: server)
            exitIfRefused(result, label: label)
            healthy = healthy && result.clean
            let what = phase == "rate" ? "rate \(rate) publishes/s" : "throughput, window \(window)"
            say(
                "\(label) \(what): \(result.published) published (\(format(result.publishRate, 1))/s), "
                    + "\(result.delivered)/\(result.expected) notifications in \(format(result.seconds, 2)) s = "
                    + "\(format(result.rate, 0))/s, latency p50 \(format(result.latency.p50, 3)) ms, "
                    + "p99 \(format(result.latency.p99, 3)) ms, max \(format(result.latency.max, 3)) ms; lost \(result.lost), "
                    + "dup \(result.duplicates), stray \(result.stray), leaked \(result.leaked), errors \(result.errors)"
                    + (result.firstError.map { " (\($0))" } ?? "")
                    + (result.cpuSeconds.map {
                        ", server CPU \(format($0, 3)) s = \(format(result.cpuMicroseconds, 1)) µs/notification"
                    } ?? "")
                    + " (load generator \(format(result.clientCPUMicroseconds, 1)) µs/notification)")
            say(
                "RESULT label=\(label) phase=\(phase) published=\(result.published) delivered=\(result.delivered) "
                    + "expected=\(result.expected) seconds=\(format(result.seconds, 3)) rate=\(format(result.rate, 1)) "
                    + "publish_rate=\(format(result.publishRate, 1)) p50_ms=\(format(result.latency.p50, 3)) "
                    + "p99_ms=\(format(result.latency.p99, 3)) max_ms=\(format(result.latency.max, 3)) lost=\(result.lost) "
                    + "dup=\(result.duplicates) stray=\(result.stray) leaked=\(result.leaked) errors=\(result.errors) "
                    + "cpu_s=\(format(result.cpuSeconds ?? 0, 3)) cpu_us=\(format(result.cpuMicroseconds, 2)) "
                    + "client_cpu_us=\(format(result.clientCPUMicroseconds, 2))")
        }
        exit(healthy ? 0 : 1)
    }

    /// A server that refused every publish of a phase has no PEP (parleyd before it had):
    /// said once, with its own exit status, so the script can tell it from a failure.
    static func exitIfRefused(_ result: PEPRun.PhaseResult, label: String) {
        guard result.published == 0, let error = result.firstError else { return }
        say("\(label): PEP publish refused: \(error)")
        say("RESULT label=\(label) phase=unsupported error=\(error.split(separator: " ").first ?? "?")")
        exit(3)
    }

    /// A user tune (XEP-0118) padded to about `bytes` with a longer title: the size of what
    /// clients publish in practice (tune, mood, nick, avatar metadata are a few hundred bytes).
    /// The padding is a two-byte character, as titles are not all ASCII. Another `--node`
    /// gets the same payload in its own namespace.
    static func tunePayload(node: String, bytes: Int) -> String {
        let head =
            "<tune xmlns='\(node)'><artist>The Benchmarks</artist><length>342</length>"
            + "<source>Loopback Sessions</source><track>7</track><uri>https://parley.invalid/tunes/7</uri><title>"
        let tail = "</title></tune>"
        let title = "Two hundred contacts"
        let padding = String(repeating: "·", count: max(0, bytes - head.utf8.count - tail.utf8.count - title.utf8.count) / 2)
        return head + title + padding + tail
    }
}

/// The run: the publisher and its contacts and strangers, spread over the event loops.
final class PEPRun: Sendable {
    enum Mode {
        case window(Int)
        case paced(perSecond: Int)
    }

    struct PhaseResult {
        var published = 0
        var errors = 0
        var firstError: String?
        var delivered = 0
        var expected = 0
        var lost = 0
        var duplicates = 0
        var stray = 0
        var leaked = 0
        var silentContacts = 0
        var seconds = 0.0
        var publishRate = 0.0
        var latency = LatencySummary([])
        var cpuSeconds: Double?
        /// This process's, to show the load generator is not what limits the rate.
        var clientCPUSeconds = 0.0

        var rate: Double { seconds > 0 ? Double(delivered) / seconds : 0 }
        var cpuMicroseconds: Double { perNotification(cpuSeconds ?? 0) }
        var clientCPUMicroseconds: Double { perNotification(clientCPUSeconds) }

        private func perNotification(_ seconds: Double) -> Double {
            delivered > 0 ? seconds * 1e6 / Double(delivered) : 0
        }

        var clean: Bool { lost == 0 && duplicates == 0 && stray == 0 && leaked == 0 && errors == 0 }
    }

    let settings: LoginBenchmark.Settings
    let publisher: PEPPublisher
    let contacts: [PEPContact]
    let strangers: [PEPContact]
    let group: MultiThreadedEventLoopGroup
    let keys = SCRAMKeyCache()

    init(
        settings: LoginBenchmark.Settings, contacts: Int, strangers: Int, node: String, payload: String,
        group: MultiThreadedEventLoopGroup
    ) throws {
        self.settings = settings
        self.group = group
        let jid = { (index: Int) in "\(settings.prefix)\(settings.firstUser + index)@\(settings.domain)" }
        publisher = PEPPublisher(loop: group.next(), bareJID: jid(0), node: node, payload: payload)
        let caps = try BenchEntityCaps(notifyNodes: [node])
        let receiver = { (index: Int, entitled: Bool) in
            PEPContact(loop: group.next(), bareJID: jid(index), entitled: entitled, publisherJID: jid(0), caps: caps)
        }
        self.contacts = (1...contacts).map { receiver($0, true) }
        self.strangers = (0..<strangers).map { receiver(contacts + 1 + $0, false) }
    }

    private var receivers: [PEPContact] { contacts + strangers }

    /// Logs every client in, at once; returns the failures (none: all are up).
    func logIn(timeout: Double) -> [String: Int] {
        let outcomes = NIOLockedValueBox<(done: Int, failures: [String: Int])>((0, [:]))
        let done = DispatchSemaphore(value: 0)
        let total = 1 + receivers.count
        let record: @Sendable (LoginOutcome) -> Void = { outcome in
            let finished = outcomes.withLockedValue { state -> Bool in
                state.done += 1
                if case .failure(let reason) = outcome { state.failures[reason, default: 0] += 1 }
                return state.done == total
            }
            if finished { done.signal() }
        }
        let rosterGet = "<iq type='get' id='roster'><query xmlns='\(XMLNamespace.roster)'/></iq>"
        var publisherSettings = settings
        publisherSettings.initialStanzas = rosterGet + "<presence/>"
        let publisher = self.publisher
        LoginClient.connect(
            on: publisher.loop, number: settings.firstUser, sourceIndex: 0, settings: publisherSettings, keys: keys,
            next: { PEPClientHandler(.publisher(publisher)) }, finish: record
        ).whenFailure { error in record(.failure("connect: \(error)")) }
        for (index, receiver) in receivers.enumerated() {
            var receiverSettings = settings
            receiverSettings.initialStanzas = rosterGet + "<presence>\(receiver.caps.presenceElement)</presence>"
            LoginClient.connect(
                on: receiver.loop, number: settings.firstUser + 1 + index, sourceIndex: 1 + index,
                settings: receiverSettings, keys: keys, next: { PEPClientHandler(.contact(receiver)) }, finish: record
            ).whenFailure { error in record(.failure("connect: \(error)")) }
        }
        if done.wait(timeout: .now() + timeout) == .timedOut {
            return ["timed out after \(Int(timeout)) s": total - outcomes.withLockedValue { $0.done }]
        }
        return outcomes.withLockedValue { $0.failures }
    }

    /// Subscription both ways between the publisher and every contact; false on timeout.
    func makeRosters(timeout: Double) -> Bool {
        let publisher = self.publisher
        let jids = contacts.map(\.bareJID)
        publisher.loop.execute { publisher.subscribe(to: jids) }
        let deadline = NIODeadline.now() + .nanoseconds(Int64(timeout * 1e9))
        while NIODeadline.now() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
            let (mutual, contactsBoth) = rosterCounts()
            if mutual == contacts.count && contactsBoth == contacts.count { return true }
        }
        return false
    }

    private func rosterCounts() -> (Int, Int) {
        let publisher = self.publisher
        let mutual = try! publisher.loop.submit { publisher.mutualContacts.count }.wait()
        let both = contacts.filter { contact in try! contact.loop.submit { contact.subscription == "both" }.wait() }
        return (mutual, both.count)
    }

    func rosterProgress() -> String {
        let (mutual, both) = rosterCounts()
        return "the publisher has \(mutual) contacts with subscription both, \(both) contacts have it with the publisher"
    }

    /// Every receiver sends its caps presence again, then the servers get `settle` seconds to
    /// ask their disco#info.
    func announce(settle: Double) {
        for receiver in receivers { receiver.loop.execute { receiver.announce() } }
        Thread.sleep(forTimeInterval: settle)
    }

    func discoQueries() -> Int {
        receivers.map { receiver in try! receiver.loop.submit { receiver.discoQueries }.wait() }.reduce(0, +)
    }

    /// Runs one phase for `seconds`, then stops publishing and waits (up to 10 s) for every
    /// answer and every notification of an acknowledged item.
    func phase(_ mode: Mode, seconds: Double, server: [ServerProcess]?) -> PhaseResult {
        let publisher = self.publisher
        let base = try! publisher.loop.submit {
            publisher.beginPhase()
            return publisher.phaseBase
        }.wait()
        for receiver in receivers { try! receiver.loop.submit { receiver.beginPhase(base: base) }.wait() }
        let cpuBefore = server.flatMap(cpuSeconds)
        let clientBefore = ServerProcess(pid: Int(getpid())).cpuSeconds() ?? 0
        let start = NIODeadline.now() + .milliseconds(5)
        let end = start + .nanoseconds(Int64(seconds * 1e9))
        publisher.loop.execute {
            switch mode {
            case .window(let window):
                publisher.startWindow(window, at: start, until: end)
            case .paced(let perSecond):
                publisher.startPaced(first: start, interval: Int64(1e9 / Double(perSecond)), until: end)
            }
        }
        Thread.sleep(forTimeInterval: max(0, Double((end - NIODeadline.now()).nanoseconds) / 1e9))
        var result = PhaseResult()
        let drainDeadline = NIODeadline.now() + .seconds(10)
        var sent = PEPPublisher.Stats()
        var stats: [PEPContact.Stats] = []
        repeat {
            Thread.sleep(forTimeInterval: 0.01)
            sent = try! publisher.loop.submit { publisher.stats }.wait()
            stats = contacts.map { contact in try! contact.loop.submit { contact.stats }.wait() }
        } while NIODeadline.now() < drainDeadline
            && (!sent.settled || stats.contains { $0.received + $0.duplicates < sent.published })
        let cpuAfter = server.flatMap(cpuSeconds)
        let drainEnd = NIODeadline.now()
        (result.published, result.errors, result.firstError) = (sent.published, sent.errors, sent.firstError)
        result.clientCPUSeconds = (ServerProcess(pid: Int(getpid())).cpuSeconds() ?? 0) - clientBefore

        let acknowledged = try! publisher.loop.submit { publisher.acknowledged }.wait()
        result.expected = sent.published * contacts.count
        var samples: [Int64] = []
        var last = start
        for (contact, stat) in zip(contacts, stats) {
            let seen = try! contact.loop.submit { contact.seen }.wait()
            result.delivered += stat.received
            result.duplicates += stat.duplicates
            result.stray += stat.stray
            result.errors += stat.errors
            if stat.received == 0 { result.silentContacts += 1 }
            for (index, wanted) in acknowledged.enumerated() where wanted && (index >= seen.count || !seen[index]) {
                result.lost += 1
            }
            last = max(last, stat.lastReceived)
            samples += try! contact.loop.submit { contact.takeLatencies() }.wait()
        }
        for stranger in strangers {
            result.leaked += try! stranger.loop.submit { stranger.stats.received + stranger.stats.duplicates }.wait()
        }
        // Until the last notification; with none, the whole phase (so the publish rate means something).
        result.seconds = Double(((result.delivered > 0 ? last : drainEnd) - start).nanoseconds) / 1e9
        result.publishRate = result.seconds > 0 ? Double(sent.published) / result.seconds : 0
        result.latency = LatencySummary(samples)
        if let cpuBefore, let cpuAfter { result.cpuSeconds = cpuAfter - cpuBefore }
        return result
    }

    /// Together, the processes of a server that runs as several (none may have ended).
    private func cpuSeconds(_ processes: [ServerProcess]) -> Double? {
        var total = 0.0
        for process in processes {
            guard let seconds = process.cpuSeconds() else { return nil }
            total += seconds
        }
        return total
    }
}
