import NIOCore
import NIOWebSocket
import ParleyCore
import ParleyStream

/// The benchmark clients' WebSocket path (RFC 7395), under the same login and message
/// handlers as on TCP: they write XML text and read `XMLStreamEvent`s; these handlers turn the
/// text into one masked text frame per element (the stream header into `<open/>`, its end into
/// `<close/>`) and the server's frames back into events.
enum BenchWebSocket {
    static let framingNamespace = "urn:ietf:params:xml:ns:xmpp-framing"

    /// The handlers that take `XMLStreamDecoder`'s place, in pipeline order.
    static func handlers(path: String, settings: LoginBenchmark.Settings) -> [any ChannelHandler] {
        [
            BenchWebSocketHandshake(path: path, host: settings.domain),
            WebSocketFrameEncoder(),
            ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: 1 << 20)),
            BenchWebSocketFraming(domain: settings.domain),
        ]
    }
}

/// The HTTP/1.1 upgrade, by hand: the request on connect, and `channelActive` passed on to the
/// handlers above (which then open their XMPP stream) only once the server switched protocols
/// and chose the `xmpp` subprotocol.
final class BenchWebSocketHandshake: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let path: String
    private let host: String
    private var response: ByteBuffer?
    private var upgraded = false

    init(path: String, host: String) {
        self.path = path
        self.host = host
    }

    func channelActive(context: ChannelHandlerContext) {
        let request = "GET \(path) HTTP/1.1\r\nHost: \(host)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: \(NIOWebSocketClientUpgrader.randomRequestKey())\r\nSec-WebSocket-Version: 13\r\n"
            + "Sec-WebSocket-Protocol: xmpp\r\n\r\n"
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: request)), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !upgraded else { return context.fireChannelRead(data) }
        var bytes = unwrapInboundIn(data)
        if response == nil { response = bytes } else { response!.writeBuffer(&bytes) }
        guard var buffer = response, let end = buffer.readableBytesView.firstRange(of: Array("\r\n\r\n".utf8)) else { return }
        let head = buffer.readString(length: end.upperBound - buffer.readerIndex) ?? ""
        response = nil
        let lines = head.lowercased().split(separator: "\r\n")
        guard lines.first?.contains(" 101 ") == true else {
            return context.fireErrorCaught(BenchFailure("WebSocket upgrade refused: \(head.split(separator: "\r\n").first ?? "")"))
        }
        guard lines.contains(where: { $0.hasPrefix("sec-websocket-protocol:") && $0.contains("xmpp") }) else {
            return context.fireErrorCaught(BenchFailure("WebSocket upgrade without the xmpp subprotocol"))
        }
        upgraded = true
        context.fireChannelActive()
        if buffer.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(buffer)) }
    }
}

/// RFC 7395 framing for the benchmark's text: see `BenchWebSocket`.
final class BenchWebSocketFraming: ChannelDuplexHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = XMLStreamEvent
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = WebSocketFrame

    private let domain: String
    /// Each message parsed as a stanza of a `jabber:client` stream that is never sent.
    private let parser = XMLStreamParser(limits: XMLStreamParser.Limits(maxStanzaBytes: 1 << 20))
    private var fragments: ByteBuffer?

    init(domain: String) {
        self.domain = domain
        _ = try? parser.feed(Array("<stream:stream xmlns='\(XMLNamespace.client)' xmlns:stream='\(XMLNamespace.streams)'>".utf8))
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .text, .continuation:
            var data = frame.unmaskedData
            if var pending = fragments {
                pending.writeBuffer(&data)
                data = pending
            }
            guard frame.fin else { fragments = data; return }
            fragments = nil
            received(data, context: context)
        case .connectionClose:
            context.close(promise: nil)
        default:
            return
        }
    }

    private func received(_ message: ByteBuffer, context: ChannelHandlerContext) {
        var events: [XMLStreamEvent] = []
        do {
            try message.withUnsafeReadableBytes { bytes throws(StreamError) in
                _ = try parser.feed(bytes) { event in
                    events.append(event)
                    return .continue
                }
            }
        } catch {
            return context.fireErrorCaught(error)
        }
        for case .stanza(let element) in events {
            if element.namespace == BenchWebSocket.framingNamespace {
                let event: XMLStreamEvent = element.name == "open"
                    ? .streamOpened(XMLStreamHeader(
                        name: "stream", namespace: XMLNamespace.streams, prefix: "stream", attributes: element.attributes,
                        namespaceDeclarations: ["": XMLNamespace.client, "stream": XMLNamespace.streams]))
                    : .streamClosed
                context.fireChannelRead(wrapInboundOut(event))
            } else {
                context.fireChannelRead(wrapInboundOut(.stanza(element)))
            }
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let text = unwrapOutboundIn(data)
        let elements = Self.topLevelElements(text)
        for (index, element) in elements.enumerated() {
            let frame = WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: translated(element, context: context))
            context.write(wrapOutboundOut(frame), promise: index == elements.count - 1 ? promise : nil)
        }
        if elements.isEmpty { promise?.succeed(()) }
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        // Each message is a document of its own: nothing to restart after SASL.
        if event is XMLStreamDecoder.Restart { return promise?.succeed(()) ?? () }
        context.triggerUserOutboundEvent(event, promise: promise)
    }

    /// The TCP stream header becomes `<open/>`, its end `<close/>`.
    private func translated(_ element: ByteBuffer, context: ChannelHandlerContext) -> ByteBuffer {
        let view = element.readableBytesView
        if view.starts(with: "<stream:stream".utf8) {
            return context.channel.allocator.buffer(string: "<open xmlns='\(BenchWebSocket.framingNamespace)' to='\(domain)' version='1.0'/>")
        }
        if view.starts(with: "</stream:stream".utf8) {
            return context.channel.allocator.buffer(string: "<close xmlns='\(BenchWebSocket.framingNamespace)'/>")
        }
        // RFC 7395 §3.3.3: each message is a document of its own, so a stanza names its
        // namespace (Prosody refuses one without; parleyd reads it as jabber:client).
        let nameEnd = view.firstIndex { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: ">") || $0 == UInt8(ascii: "/") } ?? view.endIndex
        let tagEnd = view.firstIndex(of: UInt8(ascii: ">")) ?? view.endIndex
        guard !view[view.startIndex..<tagEnd].containsSequence("xmlns=".utf8) else { return element }
        var qualified = context.channel.allocator.buffer(capacity: element.readableBytes + 24)
        qualified.writeBytes(view[view.startIndex..<nameEnd])
        qualified.writeString(" xmlns='jabber:client'")
        qualified.writeBytes(view[nameEnd...])
        return qualified
    }

    /// Splits the benchmark's own XML text (no comments, CDATA or `>` in attribute values
    /// beyond quoted ones) into its top-level elements; the stream header and its end count as
    /// elements of their own, and an XML declaration is dropped.
    static func topLevelElements(_ text: ByteBuffer) -> [ByteBuffer] {
        let bytes = text.readableBytesView
        var result: [ByteBuffer] = []
        var depth = 0
        var start: Int? = nil
        var index = bytes.startIndex
        let lt = UInt8(ascii: "<"), gt = UInt8(ascii: ">"), slash = UInt8(ascii: "/")
        while index < bytes.endIndex {
            guard bytes[index] == lt else { index += 1; continue }
            let tagStart = index
            var quote: UInt8? = nil
            var end = index + 1
            while end < bytes.endIndex {
                let byte = bytes[end]
                if let open = quote {
                    if byte == open { quote = nil }
                } else if byte == UInt8(ascii: "'") || byte == UInt8(ascii: "\"") {
                    quote = byte
                } else if byte == gt {
                    break
                }
                end += 1
            }
            let next = index + 1 < bytes.endIndex ? bytes[index + 1] : 0
            let slice = { (from: Int, to: Int) in text.getSlice(at: from - bytes.startIndex + text.readerIndex, length: to - from)! }
            if next == UInt8(ascii: "?") || next == UInt8(ascii: "!") {
                // The XML declaration.
            } else if next == slash {
                if depth == 0 {
                    result.append(slice(tagStart, end + 1))  // </stream:stream>
                } else {
                    depth -= 1
                    if depth == 0, let from = start { result.append(slice(from, end + 1)); start = nil }
                }
            } else if bytes[end - 1] == slash {
                if depth == 0 { result.append(slice(tagStart, end + 1)) }
            } else if depth == 0, bytes[tagStart...].starts(with: "<stream:stream".utf8) {
                result.append(slice(tagStart, end + 1))
            } else {
                if depth == 0 { start = tagStart }
                depth += 1
            }
            index = end + 1
        }
        return result
    }
}

extension Collection where Element == UInt8 {
    fileprivate func containsSequence<Needle: Collection>(_ needle: Needle) -> Bool where Needle.Element == UInt8 {
        guard !needle.isEmpty else { return true }
        var index = startIndex
        while index != endIndex {
            if self[index...].starts(with: needle) { return true }
            index = self.index(after: index)
        }
        return false
    }
}
