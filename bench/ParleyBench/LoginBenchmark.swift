import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ParleyCore
import ParleyStream
import ParleyTLS

#if canImport(Glibc)
import Glibc
#endif

/// `ParleyBench login`: N clients log in to an XMPP server over plain TCP (no STARTTLS) with
/// SCRAM-SHA-256, bind a resource, send initial presence and wait for the answer to a ping.
/// With `--starttls CERT` each client first upgrades its stream with STARTTLS (RFC 6120 §5),
/// as clients do against a server that requires TLS (parleyd as shipped), trusting only the
/// server certificate in the PEM file CERT; every connection makes a full handshake.
/// At most C logins are in flight at once, spread over several event loops. Reports logins/s
/// over the whole run and the p50/p99 of one login (TCP connect to pong).
///
/// With `--hold` (until stdin closes) or `--hold-seconds S` every session stays open after
/// its login, so the server's memory can be measured with N sessions; `HELD n` on stdout says
/// when they are all up.
///
/// The client caches SCRAM's SaltedPassword per (salt, iterations): otherwise it would spend a
/// PBKDF2 (about 1.5 ms of CPU) on every login and be the bottleneck itself.
enum LoginBenchmark: Benchmark {
    static var name: String { "login" }
    static var summary: String {
        "log in N clients (SCRAM-SHA-256, bind, presence, ping): --port P --users N [--concurrency C] [--hold | --hold-seconds S] [--websocket PATH] [--starttls CERT]"
    }

    struct Settings: Sendable {
        var host: String
        var port: Int
        var domain: String
        var users: Int
        var firstUser: Int
        var prefix: String
        var password: String
        var concurrency: Int
        var sources: Int
        var hold: Bool
        /// Written right after the bind, before the ping: the initial presence, and whatever a
        /// benchmark's clients must say first (the PEP benchmark's roster get and caps).
        var initialStanzas = "<presence/>"
        /// XMPP over WebSocket (RFC 7395) at this path of `port` instead of a TCP stream.
        var webSocketPath: String? = nil
        /// STARTTLS before authenticating, with this client context.
        var tls: TLSContext? = nil
    }

    static func run(arguments: [String]) throws {
        let options = try BenchOptions(
            arguments,
            valueOptions: [
                "--host", "--port", "--domain", "--users", "--first-user", "--prefix", "--password", "--concurrency",
                "--threads", "--sources", "--hold-seconds", "--timeout", "--label", "--websocket",
                "--starttls",
            ],
            flagOptions: ["--hold"])
        let holdSeconds = options.optionalString("--hold-seconds").flatMap(Double.init)
        var settings = Settings(
            host: try options.string("--host", default: "127.0.0.1"),
            port: try options.int("--port"),
            domain: try options.string("--domain", default: "localhost"),
            users: try options.int("--users", default: 1000),
            firstUser: try options.int("--first-user", default: 1),
            prefix: try options.string("--prefix", default: "user"),
            password: try options.string("--password", default: "benchpass"),
            concurrency: max(1, try options.int("--concurrency", default: 100)),
            sources: max(1, min(250, try options.int("--sources", default: 1))),
            hold: options.flag("--hold") || holdSeconds != nil,
            webSocketPath: options.optionalString("--websocket"))
        if let certificate = options.optionalString("--starttls") {
            settings.tls = try TLSContext(client: TLSClientConfiguration(trust: .pinned(.certificate(.file(certificate)))))
        }
        let threads = max(1, try options.int("--threads", default: System.coreCount))
        let timeout = Double(try options.int("--timeout", default: 120))
        let label = try options.string("--label", default: "\(settings.host):\(settings.port)")

        let limit = raiseFileLimit()
        if settings.hold, limit < settings.users + 64 {
            say("warning: the file limit is \(limit), fewer than --users \(settings.users) held sessions need")
        }

        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        let run = LoginRun(settings: settings, group: group)
        let finished = run.start(timeout: timeout)
        let report = run.report()
        say(
            "\(label): \(report.succeeded)/\(settings.users) logins in \(String(format: "%.2f", report.seconds)) s = "
                + "\(String(format: "%.0f", report.rate)) logins/s, p50 \(String(format: "%.2f", report.p50)) ms, "
                + "p99 \(String(format: "%.2f", report.p99)) ms (concurrency \(settings.concurrency), \(threads) threads)")
        for (reason, count) in report.failures.sorted(by: { $0.value > $1.value }).prefix(5) {
            say("  failed \(count)×: \(reason)")
        }
        if !finished { say("  timed out after \(Int(timeout)) s with logins still in flight") }
        say(
            "RESULT label=\(label) users=\(settings.users) ok=\(report.succeeded) failed=\(report.failed) "
                + "seconds=\(String(format: "%.3f", report.seconds)) rate=\(String(format: "%.1f", report.rate)) "
                + "p50_ms=\(String(format: "%.3f", report.p50)) p99_ms=\(String(format: "%.3f", report.p99))")

        if settings.hold {
            say("HELD \(run.openSessions)")
            if let holdSeconds {
                Thread.sleep(forTimeInterval: holdSeconds)
            } else {
                // Until whoever started us closes our stdin.
                _ = FileHandle.standardInput.readDataToEndOfFile()
            }
            say("released \(run.openSessions) sessions")
        }
        // Exiting closes every socket at once; no need to wind the sessions down one by one.
        exit(finished && report.failed == 0 ? 0 : 1)
    }

    /// Raises RLIMIT_NOFILE to its hard maximum; returns the new soft limit.
    static func raiseFileLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        _ = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        return Int(limit.rlim_cur)
    }
}

/// Prints a line and flushes, so a script reading our stdout through a pipe sees it at once.
func say(_ line: String) {
    print(line)
    fflush(nil)
}

/// One run: hands out user numbers to `concurrency` slots, each of which logs in one client
/// after another on its own event loop, and collects the outcomes.
final class LoginRun: Sendable {
    struct Report {
        var succeeded: Int
        var failed: Int
        var seconds: Double
        var rate: Double
        var p50: Double
        var p99: Double
        var failures: [String: Int]
    }

    private struct Progress {
        var next = 0
        var finished = 0
        var latencies: [Int64] = []
        var failures: [String: Int] = [:]
        var firstStart: NIODeadline?
        var lastEnd: NIODeadline?
        var channels: [any Channel] = []
    }

    let settings: LoginBenchmark.Settings
    let group: MultiThreadedEventLoopGroup
    let keys = SCRAMKeyCache()
    private let progress = NIOLockedValueBox(Progress())
    private let done = DispatchSemaphore(value: 0)

    init(settings: LoginBenchmark.Settings, group: MultiThreadedEventLoopGroup) {
        self.settings = settings
        self.group = group
        progress.withLockedValue { $0.latencies.reserveCapacity(settings.users) }
    }

    /// Starts every slot and waits until all logins have ended or `timeout` seconds passed.
    func start(timeout: Double) -> Bool {
        guard settings.users > 0 else { return true }
        let start = NIODeadline.now()
        progress.withLockedValue { $0.firstStart = start }
        for _ in 0..<min(settings.concurrency, settings.users) {
            let loop = group.next()
            loop.execute { self.startNext(on: loop) }
        }
        return done.wait(timeout: .now() + timeout) == .success
    }

    var openSessions: Int {
        progress.withLockedValue { $0.channels.filter(\.isActive).count }
    }

    private func startNext(on loop: any EventLoop) {
        let index: Int? = progress.withLockedValue { progress in
            guard progress.next < self.settings.users else { return nil }
            defer { progress.next += 1 }
            return progress.next
        }
        guard let index else { return }
        let settings = self.settings
        LoginClient.connect(
            on: loop, number: settings.firstUser + index, sourceIndex: index, settings: settings, keys: keys,
            finish: { outcome in self.finished(outcome, on: loop) }
        ).whenComplete { result in
            switch result {
            case .success(let channel):
                if settings.hold { self.progress.withLockedValue { $0.channels.append(channel) } }
            case .failure(let error):
                self.finished(.failure("connect: \(error)"), on: loop)
            }
        }
    }

    private func finished(_ outcome: LoginOutcome, on loop: any EventLoop) {
        let now = NIODeadline.now()
        let allDone: Bool = progress.withLockedValue { progress in
            progress.finished += 1
            switch outcome {
            case .success(let nanoseconds): progress.latencies.append(nanoseconds)
            case .failure(let reason): progress.failures[reason, default: 0] += 1
            }
            progress.lastEnd = now
            return progress.finished == settings.users
        }
        if allDone {
            done.signal()
        } else {
            startNext(on: loop)
        }
    }

    func report() -> Report {
        progress.withLockedValue { progress in
            let sorted = progress.latencies.sorted()
            func percentile(_ p: Double) -> Double {
                guard !sorted.isEmpty else { return 0 }
                let rank = min(sorted.count - 1, max(0, Int((p * Double(sorted.count)).rounded(.up)) - 1))
                return Double(sorted[rank]) / 1e6
            }
            let elapsed: Double
            if let first = progress.firstStart, let last = progress.lastEnd {
                elapsed = Double((last - first).nanoseconds) / 1e9
            } else {
                elapsed = 0
            }
            let failed = progress.failures.values.reduce(0, +)
            return Report(
                succeeded: sorted.count, failed: failed, seconds: elapsed,
                rate: elapsed > 0 ? Double(sorted.count) / elapsed : 0,
                p50: percentile(0.50), p99: percentile(0.99), failures: progress.failures)
        }
    }
}

/// Opening one benchmark client connection, shared by the login and message benchmarks.
enum LoginClient {
    /// Linux's IP_BIND_ADDRESS_NO_PORT (24; Glibc does not export it).
    static let bindAddressNoPort = ChannelOptions.Types.SocketOption(
        level: NIOBSDSocket.OptionLevel(rawValue: CInt(IPPROTO_IP)), name: NIOBSDSocket.Option(rawValue: 24))

    /// Connects `<prefix><number>` on `loop` and logs it in with `LoginClientHandler`, which calls
    /// `finish` once (pong or failure). With `next`, the handler made by it sits after the login
    /// handler and gets every stanza the login does not consume, and `LoginClientHandler.Event`s.
    /// `sourceIndex` picks the loopback source address when `settings.sources` > 1. The
    /// handler made by `first` sits before the decoder and sees the bytes.
    static func connect(
        on loop: any EventLoop, number: Int, sourceIndex: Int, settings: LoginBenchmark.Settings, keys: SCRAMKeyCache,
        first: (@Sendable () -> any ChannelHandler)? = nil, next: (@Sendable () -> any ChannelHandler)? = nil,
        finish: @escaping @Sendable (LoginOutcome) -> Void
    ) -> EventLoopFuture<any Channel> {
        let username = "\(settings.prefix)\(number)"
        let started = NIODeadline.now()
        var bootstrap = ClientBootstrap(group: loop)
            .connectTimeout(.seconds(10))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let first { try channel.pipeline.syncOperations.addHandler(first()) }
                    if let path = settings.webSocketPath {
                        try channel.pipeline.syncOperations.addHandlers(BenchWebSocket.handlers(path: path, settings: settings))
                    } else {
                        try channel.pipeline.syncOperations.addHandler(XMLStreamDecoder())
                    }
                    try channel.pipeline.syncOperations.addHandler(
                        LoginClientHandler(
                            username: username, settings: settings, keys: keys, started: started,
                            forward: next != nil, finish: finish))
                    if let next { try channel.pipeline.syncOperations.addHandler(next()) }
                }
            }
        if settings.sources > 1 {
            // Several loopback source addresses, so 10,000+ connections never run out of
            // ephemeral ports towards one server port. The port is picked at connect time
            // (IP_BIND_ADDRESS_NO_PORT), not by a search of the bound ports at bind.
            let source = try? SocketAddress(ipAddress: "127.0.0.\(1 + sourceIndex % settings.sources)", port: 0)
            if let source {
                bootstrap = bootstrap.channelOption(Self.bindAddressNoPort, value: 1).bind(to: source)
            }
        }
        // An address given as digits needs no resolver: `connect(host:port:)` would run
        // getaddrinfo and a Happy Eyeballs race for every login (a real client resolves once).
        if let address = try? SocketAddress(ipAddress: settings.host, port: settings.port) {
            return bootstrap.connect(to: address)
        }
        return bootstrap.connect(host: settings.host, port: settings.port)
    }
}

enum LoginOutcome: Sendable {
    /// Nanoseconds from the start of the TCP connect to the pong.
    case success(Int64)
    case failure(String)
}

/// SCRAM's client keys per (hash, salt, iterations), shared by every connection, so PBKDF2 runs
/// once per distinct salt instead of once per login. All benchmark accounts share a password.
final class SCRAMKeyCache: Sendable {
    struct Keys: Sendable {
        var clientKey: [UInt8]
        var storedKey: [UInt8]
        var serverKey: [UInt8]
    }

    private let cache = NIOLockedValueBox<[String: Keys]>([:])

    func keys(password: String, salt: [UInt8], saltText: Substring, iterations: Int) throws -> Keys {
        let key = "\(saltText)|\(iterations)"
        if let keys = cache.withLockedValue({ $0[key] }) { return keys }
        let hash = HashFunction.sha256
        let salted = try hash.pbkdf2(password: Array(password.utf8), salt: salt, iterations: iterations)
        let clientKey = try hash.hmac(key: salted, data: Array("Client Key".utf8))
        let keys = Keys(
            clientKey: clientKey, storedKey: try hash.digest(clientKey),
            serverKey: try hash.hmac(key: salted, data: Array("Server Key".utf8)))
        cache.withLockedValue { $0[key] = keys }
        return keys
    }
}

/// One client: header → features → SCRAM-SHA-256 → restart → bind → presence + ping → pong.
/// With `forward`, stanzas after the bind that are not the pong (own presence, messages) go
/// on to the next handler, which also gets an `Event` when presence is sent and at the pong.
final class LoginClientHandler: ChannelInboundHandler {
    typealias InboundIn = XMLStreamEvent
    typealias InboundOut = XMLStreamEvent
    typealias OutboundOut = ByteBuffer

    enum Event {
        /// The initial presence (and the ping) were written at this time.
        case presenceSent(NIODeadline)
        /// The ping was answered: the session is bound and available.
        case loggedIn
    }

    private enum State {
        case awaitingHeader, awaitingFeatures, awaitingProceed, awaitingChallenge, awaitingSuccess
        case awaitingBoundHeader, awaitingBindFeatures, awaitingBind, awaitingPong, done
    }

    private static let pingID = "bench-ping"
    private static let bindID = "bench-bind"

    private let username: String
    private let settings: LoginBenchmark.Settings
    private let keys: SCRAMKeyCache
    private let started: NIODeadline
    private let finish: (LoginOutcome) -> Void
    private let forward: Bool
    private var state = State.awaitingHeader
    private var clientNonce = ""
    private var expectedServerSignature: [UInt8] = []
    private var secured = false

    init(
        username: String, settings: LoginBenchmark.Settings, keys: SCRAMKeyCache, started: NIODeadline,
        forward: Bool = false, finish: @escaping (LoginOutcome) -> Void
    ) {
        self.forward = forward
        self.username = username
        self.settings = settings
        self.keys = keys
        self.started = started
        self.finish = finish
    }

    func channelActive(context: ChannelHandlerContext) {
        send(streamHeader, context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if case .done = state {} else { fail("connection closed during \(state)", context: context) }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        fail("\(error)", context: context)
    }

    private var streamHeader: String {
        "<?xml version='1.0'?><stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams' to='\(settings.domain)' version='1.0'>"
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let element: XMLElement
        switch unwrapInboundIn(data) {
        case .streamOpened:
            switch state {
            case .awaitingHeader: state = .awaitingFeatures
            case .awaitingBoundHeader: state = .awaitingBindFeatures
            default: fail("unexpected stream header in \(state)", context: context)
            }
            return
        case .streamClosed:
            return fail("server closed the stream in \(state)", context: context)
        case .stanza(let stanza):
            if forward, case .done = state {
                return context.fireChannelRead(data)
            }
            element = stanza
        }
        if element.name == "error", element.namespace == XMLNamespace.streams {
            let condition = element.elements.first?.name ?? "?"
            return fail("stream error <\(condition)/> in \(state)", context: context)
        }
        do {
            try handle(element, context: context)
        } catch {
            fail("\(error) in \(state)", context: context)
        }
    }

    private func handle(_ element: XMLElement, context: ChannelHandlerContext) throws {
        switch state {
        case .awaitingFeatures:
            guard element.name == "features" else { return }
            if settings.tls != nil, !secured {
                guard element.firstChild("starttls", namespace: XMLNamespace.tls) != nil else {
                    throw BenchFailure("STARTTLS not offered")
                }
                state = .awaitingProceed
                return send("<starttls xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>", context: context)
            }
            let offered = element.firstChild("mechanisms", namespace: XMLNamespace.sasl)?
                .children("mechanism").map(\.text) ?? []
            guard offered.contains("SCRAM-SHA-256") else {
                throw BenchFailure("SCRAM-SHA-256 not offered (offered: \(offered.joined(separator: " ")))")
            }
            clientNonce = Base64.encode(try SecureRandom.bytes(18))
            let clientFirst = "n,,n=\(username),r=\(clientNonce)"
            state = .awaitingChallenge
            send(
                "<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='SCRAM-SHA-256'>\(Base64.encode(Array(clientFirst.utf8)))</auth>",
                context: context)
        case .awaitingProceed:
            guard element.name == "proceed", element.namespace == XMLNamespace.tls, let tls = settings.tls else {
                throw BenchFailure("expected <proceed/>, got <\(element.name)/>")
            }
            // Encrypted from here on: TLS goes first in the pipeline, and the decoder starts
            // the new stream with the bytes TLS hands up (the header waits for the handshake).
            try context.pipeline.syncOperations.addHandler(TLSHandler(context: tls, serverName: settings.domain), position: .first)
            context.triggerUserOutboundEvent(XMLStreamDecoder.Restart.afterTLS, promise: nil)
            secured = true
            state = .awaitingHeader
            send(streamHeader, context: context)
        case .awaitingChallenge:
            guard element.name == "challenge", element.namespace == XMLNamespace.sasl else {
                throw BenchFailure("expected <challenge/>, got <\(element.name)/> \(saslFailureCondition(element))")
            }
            let serverFirst = String(decoding: try Base64.decode(element.text), as: UTF8.self)
            var nonce: Substring?, saltText: Substring?, iterations: Int?
            for part in serverFirst.split(separator: ",") where part.count >= 2 {
                let value = part.dropFirst(2)
                switch part.first {
                case "r": nonce = value
                case "s": saltText = value
                case "i": iterations = Int(value)
                default: break
                }
            }
            guard let nonce, nonce.hasPrefix(clientNonce), let saltText, let iterations else {
                throw BenchFailure("bad server-first-message '\(serverFirst)'")
            }
            let keys = try keys.keys(
                password: settings.password, salt: try Base64.decode(saltText), saltText: saltText,
                iterations: iterations)
            let withoutProof = "c=biws,r=\(nonce)"
            let authMessage = Array("n=\(username),r=\(clientNonce),\(serverFirst),\(withoutProof)".utf8)
            let signature = try HashFunction.sha256.hmac(key: keys.storedKey, data: authMessage)
            let proof = try ConstantTime.xor(keys.clientKey, signature)
            expectedServerSignature = try HashFunction.sha256.hmac(key: keys.serverKey, data: authMessage)
            state = .awaitingSuccess
            let clientFinal = "\(withoutProof),p=\(Base64.encode(proof))"
            send(
                "<response xmlns='urn:ietf:params:xml:ns:xmpp-sasl'>\(Base64.encode(Array(clientFinal.utf8)))</response>",
                context: context)
        case .awaitingSuccess:
            guard element.name == "success", element.namespace == XMLNamespace.sasl else {
                throw BenchFailure("expected <success/>, got <\(element.name)/> \(saslFailureCondition(element))")
            }
            let serverFinal = String(decoding: try Base64.decode(element.text), as: UTF8.self)
            guard serverFinal.hasPrefix("v="),
                try Base64.decode(serverFinal.dropFirst(2)) == expectedServerSignature
            else {
                throw BenchFailure("server signature does not verify: '\(serverFinal)'")
            }
            // The decoder starts a new stream right after </success>; we open ours.
            context.triggerUserOutboundEvent(XMLStreamDecoder.Restart.afterSASL, promise: nil)
            state = .awaitingBoundHeader
            send(streamHeader, context: context)
        case .awaitingBindFeatures:
            guard element.name == "features" else { return }
            guard element.firstChild("bind", namespace: XMLNamespace.bind) != nil else {
                throw BenchFailure("no <bind/> feature after authentication")
            }
            state = .awaitingBind
            send(
                "<iq type='set' id='\(Self.bindID)'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><resource>bench</resource></bind></iq>",
                context: context)
        case .awaitingBind:
            guard element.name == "iq", element[attribute: "id"] == Self.bindID else { return }
            guard element[attribute: "type"] == "result" else {
                throw BenchFailure("bind failed: \(element[attribute: "type"] ?? "?")")
            }
            state = .awaitingPong
            send(
                "\(settings.initialStanzas)<iq type='get' id='\(Self.pingID)' to='\(settings.domain)'><ping xmlns='urn:xmpp:ping'/></iq>",
                context: context)
            if forward { context.fireUserInboundEventTriggered(Event.presenceSent(.now())) }
        case .awaitingPong:
            // Our own presence may come back first; only the ping's answer counts.
            guard element.name == "iq", element[attribute: "id"] == Self.pingID else {
                if forward { context.fireChannelRead(wrapInboundOut(.stanza(element))) }
                return
            }
            guard element[attribute: "type"] == "result" else { throw BenchFailure("ping answered with an error") }
            state = .done
            finish(.success((NIODeadline.now() - started).nanoseconds))
            if forward { context.fireUserInboundEventTriggered(Event.loggedIn) }
            if !settings.hold {
                send("</stream:stream>", context: context)
                context.close(promise: nil)
            }
        case .done, .awaitingHeader, .awaitingBoundHeader:
            return
        }
    }

    private func saslFailureCondition(_ element: XMLElement) -> String {
        guard element.name == "failure" else { return "" }
        return element.elements.map(\.name).joined(separator: " ")
    }

    private func send(_ text: String, context: ChannelHandlerContext) {
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: text)), promise: nil)
    }

    private func fail(_ reason: String, context: ChannelHandlerContext) {
        if case .done = state { return }
        state = .done
        finish(.failure(reason))
        context.close(promise: nil)
    }
}

struct BenchFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
