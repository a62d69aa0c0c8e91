import NIOCore
import NIOWebSocket
import ParleyCore
import ParleyStream

/// The client side of RFC 7395 between WebSocket frames and `ClientStreamHandler`: each text
/// message is one complete XML element, `<open/>` and `<close/>` stand for the stream header
/// and its end, and every `XMLStreamOutput` becomes one masked text message (RFC 6455 §5.3).
/// The stream handler above is the one TCP uses; only this handler knows it is on a WebSocket.
///
/// Control frames are answered here: a ping gets its pong, a close frame its close frame.
final class WebSocketClientFraming: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = XMLStreamEvent
    typealias OutboundIn = XMLStreamOutput
    typealias OutboundOut = WebSocketFrame

    static let namespace = XMPPFraming.namespace

    /// Fired up the pipeline before `.streamClosed` when the server's `<close/>` names another
    /// endpoint (`see-other-uri`, RFC 7395 §3.6.1).
    struct Redirect: Sendable {
        var uri: String
    }

    private let maxMessageBytes: Int
    /// Every message is parsed as a stanza of a `jabber:client` stream that is never sent, so
    /// the same parser, restrictions and limits as on TCP apply, and an element without its own
    /// `xmlns` is `jabber:client`.
    private let parser: XMLStreamParser
    private var fragments: ByteBuffer?
    private var failed = false
    private var closeSent = false

    init(maxMessageBytes: Int) {
        self.maxMessageBytes = maxMessageBytes
        parser = XMLStreamParser(limits: XMLStreamParser.Limits(maxStanzaBytes: maxMessageBytes))
        _ = try? parser.feed(Array("<stream:stream xmlns='\(XMLNamespace.client)' xmlns:stream='\(XMLNamespace.streams)'>".utf8))
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .pong:
            // Life, which the keepalive handler below has already counted.
            return
        case .connectionClose:
            // RFC 6455 §5.5.1: answer, then the connection ends. Without a `<close/>` first,
            // the stream handler sees a lost connection, and a managed session is resumed.
            sendClose(context: context)
            context.close(promise: nil)
        case .text:
            guard fragments == nil else { return fail(context, "a new message began before the previous one's last frame") }
            var data = frame.unmaskedData
            if frame.fin { return received(context: context, &data) }
            fragments = data
            checkSize(context)
        case .continuation:
            guard var buffer = fragments else { return fail(context, "a continuation frame came with no message to continue") }
            var data = frame.unmaskedData
            fragments = nil
            buffer.writeBuffer(&data)
            if frame.fin { return received(context: context, &buffer) }
            fragments = buffer
            checkSize(context)
        default:
            fail(context, "a WebSocket frame with opcode \(frame.opcode) is not XMPP (RFC 7395 §3.2 uses text messages)")
        }
    }

    private func checkSize(_ context: ChannelHandlerContext) {
        if let fragments, fragments.readableBytes > maxMessageBytes {
            fail(context, "a message from the server is larger than \(maxMessageBytes) bytes")
        }
    }

    private func received(context: ChannelHandlerContext, _ message: inout ByteBuffer) {
        guard message.readableBytes <= maxMessageBytes else {
            return fail(context, "a message from the server is larger than \(maxMessageBytes) bytes")
        }
        message.skipXMLPrologue()
        guard message.readableBytes > 0 else { return }
        var elements: [XMLElement] = []
        do {
            try message.withUnsafeReadableBytes { bytes throws(StreamError) in
                _ = try parser.feed(bytes) { event in
                    if case .stanza(let element) = event { elements.append(element) }
                    return .continue
                }
            }
        } catch {
            failed = true
            return context.fireErrorCaught(error)
        }
        guard elements.count == 1, parser.isBetweenStanzas else {
            return fail(context, "a message from the server is not one complete XML element (RFC 7395 §3.3.3)")
        }
        let element = elements[0]
        guard element.namespace == Self.namespace else {
            return context.fireChannelRead(wrapInboundOut(.stanza(element)))
        }
        switch element.name {
        case "open":
            context.fireChannelRead(wrapInboundOut(.streamOpened(Self.header(from: element))))
        case "close":
            if let uri = element[attribute: "see-other-uri"] {
                context.fireUserInboundEventTriggered(Redirect(uri: uri))
            }
            context.fireChannelRead(wrapInboundOut(.streamClosed))
        default:
            fail(context, "<\(element.name)/> is not part of the RFC 7395 framing")
        }
    }

    /// The `<open/>` read as the header of a `jabber:client` stream, which the stream handler
    /// checks as on TCP.
    static func header(from open: XMLElement) -> XMLStreamHeader {
        XMLStreamHeader(
            name: "stream", namespace: XMLNamespace.streams, prefix: "stream", attributes: open.attributes,
            namespaceDeclarations: ["": XMLNamespace.client, "stream": XMLNamespace.streams])
    }


    /// The server broke the framing: the stream handler reports it and closes.
    private func fail(_ context: ChannelHandlerContext, _ reason: String) {
        failed = true
        fragments = nil
        context.fireErrorCaught(StreamError(.notWellFormed, text: reason))
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        guard let webSocketError = error as? NIOWebSocketError else { return context.fireErrorCaught(error) }
        failed = true
        context.fireErrorCaught(StreamError(.notWellFormed, text: "the server's WebSocket frames are malformed (\(webSocketError))"))
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is StreamKeepaliveHandler.PeerIdle {
            // A WebSocket ping too: proxies between here and the server see traffic, and its
            // pong is life even where the XMPP answer is slow.
            let ping = WebSocketFrame(fin: true, opcode: .ping, maskKey: .random(), data: context.channel.allocator.buffer(capacity: 0))
            context.writeAndFlush(wrapOutboundOut(ping), promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    // MARK: Outbound

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let allocator = context.channel.allocator
        switch unwrapOutboundIn(data) {
        case .open(let opening):
            writeText(context: context, XMPPFraming.open(opening, allocator: allocator), promise: promise)
        case .element(let element):
            writeText(context: context, XMPPFraming.serialize(element, allocator: allocator), promise: promise)
        case .whitespace:
            promise?.succeed(())
        case .error(let error):
            writeText(context: context, XMPPFraming.serialize(error.element, allocator: allocator), promise: nil)
            writeText(context: context, XMPPFraming.close(allocator: allocator), promise: promise)
        case .close:
            writeText(context: context, XMPPFraming.close(allocator: allocator), promise: promise)
        }
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        // After SASL the stream restarts with a new <open/> (RFC 7395 §3.5); every message
        // being a document of its own, the parser has nothing to reset.
        if event is XMLStreamDecoder.Restart { return promise?.succeed(()) ?? () }
        context.triggerUserOutboundEvent(event, promise: promise)
    }

    /// The stream handler closes once its last word is written: a close frame goes first
    /// (RFC 6455 §7.1.1).
    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        if mode == .all { sendClose(context: context) }
        context.close(mode: mode, promise: promise)
    }

    private func sendClose(context: ChannelHandlerContext) {
        guard !closeSent, context.channel.isActive else { return }
        closeSent = true
        var data = context.channel.allocator.buffer(capacity: 2)
        data.write(webSocketErrorCode: .normalClosure)
        let frame = WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: data)
        context.writeAndFlush(wrapOutboundOut(frame), promise: nil)
    }

    private func writeText(context: ChannelHandlerContext, _ text: ByteBuffer, promise: EventLoopPromise<Void>?) {
        context.write(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: text)), promise: promise)
    }
}
