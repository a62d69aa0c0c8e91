import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ParleyCore
import ParleyServer
import ParleyStream
import ServiceLifecycle

/// XMPP over BOSH (XEP-0124, XEP-0206) at `bosh.path` on the HTTP service: each POST of a
/// `<body/>` is handed to its session (or creates one), and is answered when the session has
/// something to say or its `wait` runs out. Pages from any origin may use it (CORS), as with
/// Prosody's mod_bosh.
public final class BOSHEndpoint: HTTPFeature {
    public let configuration: HTTPConfiguration.BOSH
    let server: RunningServer
    /// Whether the HTTP listener is HTTPS: then a session is confidential from its first byte.
    let httpTLS: Bool
    let sessions: BOSHSessions

    public init(configuration: HTTPConfiguration.BOSH, server: RunningServer, httpTLS: Bool, logger: Logger) {
        self.configuration = configuration
        self.server = server
        self.httpTLS = httpTLS
        sessions = BOSHSessions(maxSessions: configuration.maxSessions, logger: logger)
    }

    /// The highest version of XEP-0124 this endpoint speaks.
    static let version = (major: 1, minor: 11)
    static let defaultContentType = "text/xml; charset=utf-8"

    /// Sessions open now (tests, metrics).
    public var sessionCount: Int { sessions.liveCount }

    public func mount(on router: Router<HTTPContext>) {
        let path = RouterPath(configuration.path)
        router.post(path) { [self] request, context in
            await handle(request, context: context)
        }
        router.on(path, method: .options) { _, _ in
            Response(status: .ok, headers: Self.corsHeaders)
        }
        router.get(path) { _, _ in
            var headers = Self.corsHeaders
            headers[.contentType] = "text/plain; charset=utf-8"
            return Response(
                status: .ok, headers: headers,
                body: .init(byteBuffer: ByteBuffer(string: "XMPP over BOSH (XEP-0206): POST <body xmlns='\(BOSHRequest.namespace)'/> requests here.\n")))
        }
    }

    enum RequestKind {
        case body
        case preflight
    }

    /// What a request for this endpoint is, from its head: a POST of a `<body/>`, or a CORS
    /// preflight; nil for anything else (a GET, another path), which the router serves.
    func requestKind(method: String, path: String?) -> RequestKind? {
        guard let path else { return nil }
        var route = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        if route.count > 1, route.hasSuffix("/") { route.removeLast() }
        guard route == configuration.path else { return nil }
        switch method {
        case "POST": return .body
        case "OPTIONS": return .preflight
        default: return nil
        }
    }

    static let corsHeaders: HTTPFields = [
        .accessControlAllowOrigin: "*",
        .accessControlAllowMethods: "GET, POST, OPTIONS",
        .accessControlAllowHeaders: "Content-Type",
        .accessControlMaxAge: "7200",
    ]

    /// The route, for requests on a connection that also carried other HTTP requests (those
    /// classified as BOSH from their first request are answered by `BOSHConnectionHandler`,
    /// without a task per connection).
    private func handle(_ request: Request, context: HTTPContext) async -> Response {
        let bytes: ByteBuffer
        do {
            bytes = try await request.body.collect(upTo: configuration.maxBodyBytes)
        } catch {
            return Self.response(refusal(.policyViolation, "a body over \(configuration.maxBodyBytes) bytes", legacy: false))
        }
        let (future, session) = receive(bytes, remoteAddress: context.remoteAddress, eventLoop: context.eventLoop)
        return Self.response(await answer(future, session: session) ?? refusal(.internalServerError, "no answer", legacy: false))
    }

    /// One request's `<body/>`: to its session, or a new one. The future completes when the
    /// session answers (at once, or when a held request is released); `session` is nil for a
    /// creation or a refusal.
    func receive(
        _ bytes: ByteBuffer, remoteAddress: SocketAddress?, eventLoop: any EventLoop
    ) -> (answer: EventLoopFuture<BOSHAnswer>, session: BOSHSessions.Entry?) {
        let parsed: BOSHRequest
        do {
            parsed = try BOSHRequest.parse(bytes, maxDepth: server.configuration.limits.maxDepth)
        } catch {
            return (eventLoop.makeSucceededFuture(refusal(error.condition, error.reason, legacy: false)), nil)
        }
        guard let sid = parsed.sid else {
            return (create(parsed, remoteAddress: remoteAddress, loop: eventLoop), nil)
        }
        guard let entry = sessions.lookup(sid) else {
            return (eventLoop.makeSucceededFuture(refusal(.itemNotFound, "no session \(sid)", legacy: false)), nil)
        }
        let promise = entry.eventLoop.makePromise(of: BOSHAnswer.self)
        entry.eventLoop.execute { entry.session.value.receive(parsed, promise: promise) }
        return (promise.futureResult, entry)
    }

    /// A body over `bosh.max_body_size`.
    func oversizedBody() -> BOSHAnswer {
        refusal(.policyViolation, "a body over \(configuration.maxBodyBytes) bytes", legacy: false)
    }

    /// A session creation request (XEP-0124 §7.1, XEP-0206 §4), on the loop of the connection
    /// it came on, where the session will live.
    private func create(_ request: BOSHRequest, remoteAddress remote: SocketAddress?, loop: any EventLoop) -> EventLoopFuture<BOSHAnswer> {
        let legacy = request.body[attribute: "ver"] == nil
        guard let to = request.to else {
            return loop.makeSucceededFuture(refusal(.improperAddressing, "no 'to' in the session creation request", legacy: legacy))
        }
        let domain = server.context.policy.domain
        guard let jid = try? JID(to), jid == domain else {
            return loop.makeSucceededFuture(refusal(.hostUnknown, "'\(to)' is not served here", legacy: legacy))
        }
        guard let waitText = request.body[attribute: "wait"], let wait = Int(waitText), wait >= 0 else {
            return loop.makeSucceededFuture(refusal(.badRequest, "no valid 'wait' in the session creation request", legacy: legacy))
        }
        guard let hold = Int(request.body[attribute: "hold"] ?? "1"), hold >= 0 else {
            return loop.makeSucceededFuture(refusal(.badRequest, "'hold' is not a number", legacy: legacy))
        }
        guard sessions.reserve() else {
            return loop.makeSucceededFuture(
                refusal(.remoteConnectionFailed, "the server has \(configuration.maxSessions) BOSH sessions", legacy: legacy))
        }
        let terms = terms(for: request, wait: wait, hold: hold, domain: domain.description)
        let secure = httpTLS || WebSocketEndpoint.isLoopback(remote)
        let promise = loop.makePromise(of: BOSHAnswer.self)
        let sid = Self.makeSID()
        loop.execute { [self] in
            let channel = BOSHChannel(eventLoop: loop, remoteAddress: remote)
            let session = BOSHSession(sid: sid, channel: channel, terms: terms, creationRID: request.rid, registry: sessions)
            channel.delegate = session
            do {
                try channel.pipeline.syncOperations.addHandler(BOSHShutdownHandler(session: session))
                try channel.pipeline.syncOperations.addHandler(
                    server.context.makeSessionHandler(remoteAddress: remote?.ipAddress ?? "unknown", transport: .bosh(secure: secure)))
            } catch {
                sessions.release()
                return promise.succeed(session.answer(.terminate(.internalServerError), condition: .internalServerError))
            }
            sessions.insert(sid, BOSHSessions.Entry(eventLoop: loop, session: NIOLoopBound(session, eventLoop: loop)))
            channel.activate()
            server.trackConnection(channel)
            // The creation request is answered at once (with the stream features), never held.
            session.receive(request, promise: promise)
        }
        return promise.futureResult
    }

    /// The session's answer to a request. A held request must not keep the HTTP service's
    /// graceful shutdown waiting: when it starts, the session is told the server is stopping
    /// (`<system-shutdown/>`, or the configured redirect), which answers every held request; and
    /// a request cancelled when the grace period is over returns nil (a session answering after
    /// that completes an already failed promise, which NIO ignores).
    private func answer(_ future: EventLoopFuture<BOSHAnswer>, session: BOSHSessions.Entry?) async -> BOSHAnswer? {
        let shutdown = ServerShutdownEvent(server.configuration.shutdown)
        let cancelled = future.eventLoop.makePromise(of: BOSHAnswer.self)
        future.cascade(to: cancelled)
        return await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                try? await cancelled.futureResult.get()
            } onCancel: {
                cancelled.fail(CancellationError())
            }
        } onGracefulShutdown: {
            guard let session else { return }
            session.eventLoop.execute { session.session.value.channel.pipeline.fireUserInboundEventTriggered(shutdown) }
        }
    }

    private func terms(for request: BOSHRequest, wait: Int, hold: Int, domain: String) -> BOSHSession.Terms {
        let hold = min(hold, configuration.maxHold)
        var attributes = [XMLAttribute("to", request.to ?? domain)]
        attributes.append(XMLAttribute("version", request.body.attribute("version", namespace: BOSHRequest.xmppNamespace) ?? "1.0"))
        if let from = request.body[attribute: "from"] { attributes.append(XMLAttribute("from", from)) }
        if let language = request.language { attributes.append(XMLAttribute("lang", language, namespace: XMLNamespace.xml)) }
        return BOSHSession.Terms(
            wait: min(wait, Self.seconds(configuration.maxWait)), hold: hold,
            requests: max(1, min(configuration.maxRequests, hold + 1)),
            inactivity: Self.seconds(configuration.inactivity), maxPause: Self.seconds(configuration.maxPause),
            polling: Self.seconds(configuration.polling), version: Self.answeredVersion(request.body[attribute: "ver"]),
            contentType: Self.contentType(request.body[attribute: "content"]),
            acknowledgements: request.body[attribute: "ack"] == "1", domain: domain,
            header: XMLStreamHeader(
                name: "stream", namespace: XMLNamespace.streams, prefix: "stream", attributes: attributes,
                namespaceDeclarations: ["": XMLNamespace.client, "stream": XMLNamespace.streams]))
    }

    /// §7.2: the client's version if lower than ours, else ours; nil when it sent none.
    static func answeredVersion(_ client: String?) -> String? {
        guard let client else { return nil }
        let parts = client.split(separator: ".").compactMap { Int($0) }
        guard parts.count == 2 else { return "\(version.major).\(version.minor)" }
        if (parts[0], parts[1]) < (version.major, version.minor) { return "\(parts[0]).\(parts[1])" }
        return "\(version.major).\(version.minor)"
    }

    /// §7.1 `content`: the Content-Type the client wants its answers in, when it is a sane one.
    static func contentType(_ requested: String?) -> String {
        guard let requested, requested.count <= 100, !requested.isEmpty,
            requested.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value < 0x7F })
        else { return defaultContentType }
        return requested
    }

    private static func seconds(_ duration: Duration) -> Int {
        Int(duration.components.seconds)
    }

    private static func makeSID() -> String {
        let bytes = (try? SecureRandom.bytes(16)) ?? (0..<16).map { _ in UInt8.random(in: 0...255) }
        return bytes.map { byte in
            let hex = String(byte, radix: 16)
            return hex.count == 1 ? "0" + hex : hex
        }.joined()
    }

    /// An answer outside any session (or to a request that could not be read).
    func refusal(_ condition: BOSHError.Condition, _ reason: String, legacy: Bool) -> BOSHAnswer {
        sessions.logger.debug("BOSH request refused", metadata: ["condition": "\(condition.rawValue)", "reason": "\(reason)"])
        return BOSHAnswer(
            status: legacy ? condition.legacyStatus : 200, body: BOSHResponseBody.terminate(condition).bytes,
            contentType: Self.defaultContentType)
    }

    static func response(_ answer: BOSHAnswer) -> Response {
        var headers = corsHeaders
        headers[.contentType] = answer.contentType
        return Response(status: .init(code: answer.status), headers: headers, body: .init(byteBuffer: answer.body))
    }
}
