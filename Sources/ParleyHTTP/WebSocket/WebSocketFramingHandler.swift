import NIOCore
import NIOWebSocket
import ParleyCore
import ParleyServer
import ParleyStream

/// RFC 7395 between WebSocket frames and the client session: each text message is one
/// complete XML element (`<open/>` and `<close/>` in the framing namespace stand for the stream
/// header and its end), and each `XMLStreamOutput` the session writes becomes one text message.
/// The session underneath is the same as on TCP; only this handler knows it is on a WebSocket.
///
/// Control frames are answered here (pong, the closing handshake), and so is the peer falling
/// silent: a WebSocket ping rather than an XMPP one, which browsers answer on their own.
final class WebSocketFramingHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = XMLStreamEvent
    typealias OutboundIn = XMLStreamOutput
    typealias OutboundOut = WebSocketFrame

    static let framingNamespace = XMPPFraming.namespace

    private let maxMessageBytes: Int
    /// One parser for the whole connection, inside a stream root that is never sent: every
    /// message is then parsed as a stanza of a `jabber:client` stream, as on TCP, with the
    /// same restrictions and limits, and a message without its own `xmlns` is `jabber:client`.
    private let parser: XMLStreamParser
    /// Text of a message whose frames are still arriving.
    private var fragments: ByteBuffer?
    /// Until an `<open/>`: at the start and after each stream restart (SASL success).
    private var expectingOpen = true
    private var failed = false
    private var closeSent = false
    /// The WebSocket close code to end with (RFC 6455 §7.4.1), when not a normal closure.
    private var closeCode = WebSocketErrorCode.normalClosure
    /// Set by a redirecting shutdown: the `<close/>` that ends the stream carries it.
    private var seeOtherURI: String?
    /// As `XMLStreamDecoder` does on TCP: libxml2's context (most of an idle connection's
    /// memory) is given back after this long without a message, and rebuilt by the next one.
    private static let releaseMemoryAfter = TimeAmount.seconds(2)
    private var lastMessage = NIODeadline.uptimeNanoseconds(0)
    private var releaseTimer: Scheduled<Void>?

    init(maxMessageBytes: Int, limits: XMLStreamParser.Limits) {
        self.maxMessageBytes = maxMessageBytes
        var limits = limits
        limits.maxStanzaBytes = max(limits.maxStanzaBytes, maxMessageBytes)
        parser = XMLStreamParser(limits: limits)
        _ = try? parser.feed(Array(
            "<stream:stream xmlns='\(XMLNamespace.client)' xmlns:stream='\(XMLNamespace.streams)'>".utf8))
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        releaseTimer?.cancel()
        releaseTimer = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        releaseTimer?.cancel()
        releaseTimer = nil
        context.fireChannelInactive()
    }

    /// One timer per connection at most, re-armed only when it fires too early.
    private func scheduleMemoryRelease(context: ChannelHandlerContext) {
        guard releaseTimer == nil, !failed else { return }
        let idle = Self.releaseMemoryAfter
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        releaseTimer = context.eventLoop.scheduleTask(deadline: lastMessage + idle) {
            let (handler, context) = loopBound.value
            handler.releaseTimer = nil
            if context.eventLoop.now - handler.lastMessage >= idle {
                handler.parser.releaseIdleMemory()
            } else {
                handler.scheduleMemoryRelease(context: context)
            }
        }
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .ping:
            guard frame.fin else { return fail(context, Self.badFrame("A ping frame must not be fragmented."), code: .protocolError) }
            let pong = WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .pong:
            // Life, which the keepalive handler below has already counted.
            return
        case .connectionClose:
            receivedClose(context: context, frame: frame)
        case .binary:
            fail(context, StreamError(.badFormat, text: "XMPP over WebSocket uses text messages only (RFC 7395 §3.2)."), code: .unacceptableData)
        case .text:
            guard fragments == nil else {
                return fail(context, Self.badFrame("A new message began before the previous one's last frame."), code: .protocolError)
            }
            var data = frame.unmaskedData
            if frame.fin { return receivedMessage(context: context, &data) }
            fragments = data
            checkSize(context: context)
        case .continuation:
            guard var buffer = fragments else {
                return fail(context, Self.badFrame("A continuation frame came with no message to continue."), code: .protocolError)
            }
            var data = frame.unmaskedData
            fragments = nil
            buffer.writeBuffer(&data)
            if frame.fin { return receivedMessage(context: context, &buffer) }
            fragments = buffer
            checkSize(context: context)
        default:
            fail(context, Self.badFrame("Unknown WebSocket opcode \(frame.opcode)."), code: .protocolError)
        }
    }

    private func checkSize(context: ChannelHandlerContext) {
        guard let fragments, fragments.readableBytes > maxMessageBytes else { return }
        tooLarge(context)
    }

    private func tooLarge(_ context: ChannelHandlerContext) {
        fragments = nil
        fail(context, StreamError(.policyViolation, text: "A WebSocket message is larger than \(maxMessageBytes) bytes."), code: .messageTooLarge)
    }

    private func receivedMessage(context: ChannelHandlerContext, _ message: inout ByteBuffer) {
        guard message.readableBytes <= maxMessageBytes else { return tooLarge(context) }
        lastMessage = context.eventLoop.now
        scheduleMemoryRelease(context: context)
        skipPrologue(&message)
        // Empty and whitespace-only messages carry nothing; some clients send them to keep
        // proxies from timing out.
        guard message.readableBytes > 0 else { return }
        if expectingOpen, Self.startsWithStreamHeader(message) {
            return fail(context, StreamError(
                .invalidNamespace,
                text: "This endpoint speaks RFC 7395: open the stream with <open xmlns='\(Self.framingNamespace)'/>, not <stream:stream>."))
        }
        var events: [XMLStreamEvent] = []
        do {
            try message.withUnsafeReadableBytes { bytes throws(StreamError) in
                _ = try parser.feed(bytes) { event in
                    events.append(event)
                    return .continue
                }
            }
        } catch {
            return fail(context, error)
        }
        let elements = events.compactMap { event -> XMLElement? in
            if case .stanza(let element) = event { return element }
            return nil
        }
        guard elements.count == 1, parser.isBetweenStanzas else {
            let what = elements.count > 1 ? "holds \(elements.count) elements" : "ends inside an element"
            return fail(context, StreamError(
                .notWellFormed, text: "Each WebSocket message must be one complete XML element (RFC 7395 §3.3.3); this one \(what)."))
        }
        received(elements[0], context: context)
    }

    private func received(_ element: XMLElement, context: ChannelHandlerContext) {
        if element.namespace == Self.framingNamespace {
            switch element.name {
            case "open":
                guard expectingOpen else {
                    return fail(context, StreamError(.badFormat, text: "<open/> is only allowed at the start of a stream."))
                }
                expectingOpen = false
                context.fireChannelRead(wrapInboundOut(.streamOpened(Self.header(from: element))))
            case "close":
                context.fireChannelRead(wrapInboundOut(.streamClosed))
            default:
                fail(context, StreamError(.unsupportedStanzaType, text: "<\(element.name)/> is not part of the RFC 7395 framing."))
            }
            return
        }
        guard !expectingOpen else {
            return fail(context, StreamError(.badFormat, text: "The stream must begin with <open xmlns='\(Self.framingNamespace)'/>."))
        }
        context.fireChannelRead(wrapInboundOut(.stanza(element)))
    }

    /// The `<open/>` as the header of a `jabber:client` stream, which the session checks as on
    /// TCP (`to`, `version`).
    static func header(from open: XMLElement) -> XMLStreamHeader {
        XMLStreamHeader(
            name: "stream", namespace: XMLNamespace.streams, prefix: "stream", attributes: open.attributes,
            namespaceDeclarations: ["": XMLNamespace.client, "stream": XMLNamespace.streams])
    }

    /// An XML declaration may start a message (each is a document of its own) but not the
    /// running stream the parser sees.
    private func skipPrologue(_ buffer: inout ByteBuffer) {
        Self.skipWhitespace(&buffer)
        if buffer.readableBytesView.starts(with: "<?xml".utf8) {
            guard let end = buffer.readableBytesView.firstRange(of: "?>".utf8) else { return }
            buffer.moveReaderIndex(to: end.upperBound)
            Self.skipWhitespace(&buffer)
        }
    }

    private static func skipWhitespace(_ buffer: inout ByteBuffer) {
        let count = buffer.readableBytesView.prefix { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }.count
        buffer.moveReaderIndex(forwardBy: count)
    }

    private static func startsWithStreamHeader(_ buffer: ByteBuffer) -> Bool {
        let view = buffer.readableBytesView
        return view.starts(with: "<stream:stream".utf8) || view.starts(with: "<stream ".utf8)
    }

    private static func badFrame(_ text: String) -> StreamError {
        StreamError(.notWellFormed, text: text)
    }

    private func receivedClose(context: ChannelHandlerContext, frame: WebSocketFrame) {
        // RFC 6455 §5.5.1: answer with a close frame, then the connection ends. A client that
        // closes without <close/> has lost its connection, as far as the session knows: a
        // resumable session waits for it.
        var data = frame.unmaskedData
        let code = data.readWebSocketErrorCode() ?? .normalClosure
        sendClose(context: context, code: code)
        context.close(promise: nil)
    }

    /// Hands a framing violation to the session, which sends the stream error and `<close/>`
    /// and then closes; this handler reads nothing more.
    private func fail(_ context: ChannelHandlerContext, _ error: StreamError, code: WebSocketErrorCode = .normalClosure) {
        failed = true
        fragments = nil
        closeCode = code
        context.fireErrorCaught(error)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        guard let webSocketError = error as? NIOWebSocketError else { return context.fireErrorCaught(error) }
        failed = true
        switch webSocketError {
        case .invalidFrameLength:
            closeCode = .messageTooLarge
            context.fireErrorCaught(
                StreamError(.policyViolation, text: "A WebSocket frame is larger than \(maxMessageBytes) bytes."))
        default:
            closeCode = .protocolError
            context.fireErrorCaught(Self.badFrame("The WebSocket frames are malformed (\(webSocketError))."))
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if var shutdown = event as? ServerShutdownEvent {
            // RFC 7395 §3.6.1: a WebSocket is sent elsewhere by its `<close/>`, not by a
            // `<see-other-host/>` stream error (which names no endpoint a web client can use).
            shutdown.redirectHost = nil
            if let uri = shutdown.redirectWebSocketURI {
                seeOtherURI = uri
                shutdown.redirectedByTransport = true
            }
            return context.fireUserInboundEventTriggered(shutdown)
        }
        if event is StreamKeepaliveHandler.PeerIdle {
            // A pong (or anything else) coming back is the sign of life the keepalive waits for.
            let ping = WebSocketFrame(fin: true, opcode: .ping, data: context.channel.allocator.buffer(capacity: 0))
            context.writeAndFlush(wrapOutboundOut(ping), promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    // MARK: Outbound

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .open(let opening):
            writeText(context: context, XMPPFraming.open(opening, allocator: context.channel.allocator), promise: promise)
        case .element(let element):
            writeText(context: context, XMPPFraming.serialize(element, allocator: context.channel.allocator), promise: promise)
        case .whitespace:
            promise?.succeed(())
        case .error(let error):
            writeText(context: context, XMPPFraming.serialize(error.element, allocator: context.channel.allocator), promise: nil)
            writeText(context: context, XMPPFraming.close(allocator: context.channel.allocator), promise: promise)
        case .close:
            writeText(context: context, XMPPFraming.close(seeOtherURI: seeOtherURI, allocator: context.channel.allocator), promise: promise)
        }
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        if event is XMLStreamDecoder.Restart {
            // After SASL success the client opens a new stream with a new <open/> (RFC 7395 §3.5);
            // each message being a whole document, the parser itself has nothing to reset.
            expectingOpen = true
            promise?.succeed(())
        } else if event is StreamKeepaliveHandler.AwaitingHeader {
            promise?.succeed(())
        } else {
            context.triggerUserOutboundEvent(event, promise: promise)
        }
    }

    /// The session closes once its last word is written: end the WebSocket with a close frame
    /// first (RFC 6455 §7.1.1), then the connection.
    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        if mode == .all { sendClose(context: context, code: closeCode) }
        context.close(mode: mode, promise: promise)
    }

    private func sendClose(context: ChannelHandlerContext, code: WebSocketErrorCode) {
        guard !closeSent, context.channel.isActive else { return }
        closeSent = true
        var data = context.channel.allocator.buffer(capacity: 2)
        data.write(webSocketErrorCode: code)
        context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: data)), promise: nil)
    }

    private func writeText(context: ChannelHandlerContext, _ text: ByteBuffer, promise: EventLoopPromise<Void>?) {
        context.write(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, data: text)), promise: promise)
    }
}
