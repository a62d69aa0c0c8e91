import Foundation
import NIOCore
import NIOPosix
import NIOWebSocket
import ParleyCore
import ParleyTestSupport
import Synchronization
import Testing

/// An XMPP-over-WebSocket client (RFC 7395) for scenarios: a hand-made HTTP/1.1 upgrade, then
/// NIO's frame codec. Above it, a `TestClient` as on TCP: each `send` is one text message, and
/// each message received becomes one `ServerEvent` (`<open/>` a header, `<close/>` the stream's
/// end), so the negotiation and stream management helpers work unchanged.
final class WebSocketTestClient: Sendable {
    /// What the server answered to the upgrade request when it did not switch protocols.
    struct HTTPAnswer: Sendable {
        var status: Int
        var headers: [(String, String)]
        var body: String

        func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
    }

    enum Outcome: Sendable {
        case upgraded(WebSocketTestClient)
        case refused(HTTPAnswer)
    }

    let xmpp: TestClient
    let frames: WebSocketFrameLog
    /// The upgrade's response headers.
    let responseHeaders: [(String, String)]

    private init(xmpp: TestClient, frames: WebSocketFrameLog, responseHeaders: [(String, String)]) {
        self.xmpp = xmpp
        self.frames = frames
        self.responseHeaders = responseHeaders
    }

    static func connect(
        port: Int, path: String = "/xmpp-websocket", protocols: [String]? = ["xmpp"], origin: String? = nil
    ) async throws -> Outcome {
        let events = ServerEventQueue()
        let log = WebSocketFrameLog()
        let handshake = HandshakeHandler()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(2))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(handshake) }
            }
            .connect(host: "127.0.0.1", port: port).get()
        var request = "GET \(path) HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        request += "Sec-WebSocket-Key: \(NIOWebSocketClientUpgrader.randomRequestKey())\r\nSec-WebSocket-Version: 13\r\n"
        if let protocols { request += "Sec-WebSocket-Protocol: \(protocols.joined(separator: ", "))\r\n" }
        if let origin { request += "Origin: \(origin)\r\n" }
        try await channel.writeAndFlush(ByteBuffer(string: request + "\r\n"))
        let answer = try await handshake.answer()
        guard answer.status == 101 else {
            try? await channel.close()
            return .refused(answer)
        }
        try await channel.eventLoop.submit {
            let pipeline = channel.pipeline.syncOperations
            _ = pipeline.removeHandler(handshake)
            try pipeline.addHandler(WebSocketFrameEncoder())
            try pipeline.addHandler(ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: 1 << 22)))
            try pipeline.addHandler(WebSocketClientFraming(queue: events, log: log))
        }.get()
        let xmpp = TestClient(channel: channel, events: events, fingerprint: "")
        return .upgraded(WebSocketTestClient(xmpp: xmpp, frames: log, responseHeaders: answer.headers))
    }

    /// Connects and insists on the upgrade.
    static func open(port: Int) async throws -> WebSocketTestClient {
        switch try await connect(port: port) {
        case .upgraded(let client): return client
        case .refused(let answer): throw ScenarioFailure("the upgrade was refused: \(answer.status) \(answer.body)")
        }
    }

    // MARK: XMPP

    static func openElement(to: String? = TestServer.domain, version: String? = "1.0") -> String {
        var open = "<open xmlns='urn:ietf:params:xml:ns:xmpp-framing'"
        if let to { open += " to='\(to)'" }
        if let version { open += " version='\(version)'" }
        return open + "/>"
    }

    /// `<open/>`, answered with `<open/>` and the features.
    @discardableResult
    func openStream() async throws -> XMLElement {
        try await xmpp.send(Self.openElement())
        let header = try await xmpp.expectHeader()
        #expect(header[attribute: "from"] == TestServer.domain)
        #expect(header[attribute: "version"] == "1.0")
        #expect(header[attribute: "id"]?.isEmpty == false)
        return try await xmpp.expect("features", namespace: XMLNamespace.streams)
    }

    /// `<open/>`, SCRAM-SHA-256, `<open/>` again: returns the features offered for binding.
    @discardableResult
    func authenticate(_ username: String, password: String? = nil) async throws -> XMLElement {
        try await openStream()
        let outcome = try await xmpp.authenticateSCRAM(
            username: username, password: password ?? TestServer.threeAccounts[username] ?? "")
        guard outcome == .success else { throw ScenarioFailure("login of \(username) failed: \(outcome)") }
        return try await openStream()
    }

    /// Authenticates and binds; returns the full JID.
    @discardableResult
    func login(_ username: String, resource: String? = nil) async throws -> String {
        try await authenticate(username)
        let reply = try await xmpp.bind(resource: resource)
        guard reply.type == "result", let jid = reply.firstChild("bind", namespace: XMLNamespace.bind)?.firstChild("jid")?.text else {
            throw ScenarioFailure("bind failed: \(reply.xmlString())")
        }
        return jid
    }

    /// A frame of any kind, as given (masked as a client's must be).
    func send(frame: WebSocketFrame) async throws {
        var frame = frame
        frame.maskKey = .random()
        let channel = xmpp.channel
        try await channel.eventLoop.submit {
            try channel.pipeline.syncOperations.handler(type: WebSocketClientFraming.self).sendRaw(frame)
        }.get()
    }

    /// `<stream:error>` with `condition`, then `<close/>`, then the WebSocket close frame with
    /// `code`, then the connection closing.
    @discardableResult
    func expectStreamError(_ condition: StreamErrorCondition, closeCode: WebSocketErrorCode = .normalClosure) async throws -> StreamError {
        let error = try await xmpp.expectStreamError(condition)
        #expect(frames.closeCodes == [closeCode])
        return error
    }
}

/// Every text message, pong and close code the client received, as sent.
final class WebSocketFrameLog: Sendable {
    private let state = Mutex<(texts: [String], pongs: [String], pings: Int, closeCodes: [WebSocketErrorCode])>(([], [], 0, []))

    func record(text: String) { state.withLock { $0.texts.append(text) } }
    func record(pong: String) { state.withLock { $0.pongs.append(pong) } }
    func recordPing() { state.withLock { $0.pings += 1 } }
    var pings: Int { state.withLock { $0.pings } }
    func record(closeCode: WebSocketErrorCode) { state.withLock { $0.closeCodes.append(closeCode) } }
    var texts: [String] { state.withLock { $0.texts } }
    var pongs: [String] { state.withLock { $0.pongs } }
    var closeCodes: [WebSocketErrorCode] { state.withLock { $0.closeCodes } }
}

/// Reads the HTTP answer to the upgrade request, up to the end of its headers (and its body,
/// when it has a Content-Length).
private final class HandshakeHandler: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = ByteBuffer

    private let received = Mutex<(bytes: [UInt8], closed: Bool)>(([], false))

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        received.withLock { $0.bytes.append(contentsOf: buffer.readableBytesView) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        received.withLock { $0.closed = true }
        context.fireChannelInactive()
    }

    func answer(timeout: Duration = TestClient.defaultTimeout) async throws -> WebSocketTestClient.HTTPAnswer {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let (bytes, closed) = received.withLock { ($0.bytes, $0.closed) }
            let text = String(decoding: bytes, as: UTF8.self)
            if let end = text.range(of: "\r\n\r\n") {
                let lines = text[..<end.lowerBound].components(separatedBy: "\r\n")
                let status = Int(lines[0].split(separator: " ")[1]) ?? 0
                let headers = lines.dropFirst().compactMap { line -> (String, String)? in
                    guard let colon = line.firstIndex(of: ":") else { return nil }
                    return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
                }
                let body = String(text[end.upperBound...])
                let length = headers.first { $0.0.lowercased() == "content-length" }.flatMap { Int($0.1) } ?? 0
                if status == 101 || body.utf8.count >= length || closed {
                    return .init(status: status, headers: headers, body: body)
                }
            }
            if closed { throw ScenarioFailure("the connection closed before an HTTP answer: \(text)") }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw ScenarioFailure("no HTTP answer to the upgrade request")
    }
}

/// Text messages ↔ `TestClient`'s bytes and events. Each received message must be one complete
/// element (RFC 7395 §3.3.3); `<open/>` and `<close/>` are validated against the framing schema.
final class WebSocketClientFraming: ChannelDuplexHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = WebSocketFrame

    private let queue: ServerEventQueue
    private let log: WebSocketFrameLog
    private var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    /// A frame the test wants sent as it is.
    func sendRaw(_ frame: WebSocketFrame) {
        context?.writeAndFlush(wrapOutboundOut(frame), promise: nil)
    }

    init(queue: ServerEventQueue, log: WebSocketFrameLog) {
        self.queue = queue
        self.log = log
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text:
            let text = String(buffer: frame.unmaskedData)
            log.record(text: text)
            queue.appendRaw(frame.unmaskedData)
            queue.append(Self.event(for: text))
        case .ping:
            log.recordPing()
            let pong = WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .pong:
            log.record(pong: String(buffer: frame.unmaskedData))
        case .connectionClose:
            var data = frame.unmaskedData
            log.record(closeCode: data.readWebSocketErrorCode() ?? .normalClosure)
        default:
            queue.append(.malformed(StreamError(.badFormat, text: "unexpected frame \(frame.opcode)")))
        }
    }

    static func event(for text: String) -> ServerEvent {
        let parser = XMLStreamParser(limits: .init(maxStanzaBytes: 1 << 22, maxDepth: 64))
        do {
            _ = try parser.feed(Array("<stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>".utf8))
            let events = try parser.feed(Array(text.utf8))
            let elements = events.compactMap { event -> XMLElement? in
                if case .stanza(let element) = event { return element }
                return nil
            }
            guard elements.count == 1, parser.isBetweenStanzas else {
                return .malformed(StreamError(.notWellFormed, text: "a message with \(elements.count) elements: \(text)"))
            }
            let element = elements[0]
            if element.namespace == "urn:ietf:params:xml:ns:xmpp-framing" {
                do {
                    try SchemaValidator.shared.validate(text)
                } catch {
                    Issue.record("<\(element.name)/> does not match the schemas: \(error)\n\(text)")
                }
                if element.name == "open" {
                    return .header(XMLStreamHeader(
                        name: "stream", namespace: XMLNamespace.streams, prefix: "stream", attributes: element.attributes,
                        namespaceDeclarations: ["": XMLNamespace.client, "stream": XMLNamespace.streams]))
                }
                if element.name == "close" { return .streamClosed }
            }
            return .element(element)
        } catch {
            return .malformed(error)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let buffer = unwrapOutboundIn(data)
        context.write(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: buffer)), promise: promise)
    }

    func channelInactive(context: ChannelHandlerContext) {
        queue.append(.closed)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }
}
