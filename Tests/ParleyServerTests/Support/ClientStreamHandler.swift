import NIOCore
import ParleyCore
import ParleyTLS
import Synchronization

/// What a scenario client saw the server do, in order.
enum ServerEvent: Sendable, CustomStringConvertible {
    /// The server's `<stream:stream>` start tag.
    case header(XMLStreamHeader)
    /// A depth-1 element: a stanza, features, a SASL or TLS element, a stream error.
    case element(XMLElement)
    /// `</stream:stream>`.
    case streamClosed
    /// The server's bytes were not a well-formed XMPP stream (as the client parser judges).
    case malformed(StreamError)
    /// The TCP connection is gone.
    case closed

    var description: String {
        switch self {
        case .header(let header): "header from=\(header[attribute: "from"] ?? "-") id=\(header[attribute: "id"] ?? "-")"
        case .element(let element): element.xmlString()
        case .streamClosed: "</stream:stream>"
        case .malformed(let error): "malformed: \(error)"
        case .closed: "connection closed"
        }
    }
}

/// Everything the client received, queued for the test to take in order, plus the raw text.
final class ServerEventQueue: Sendable {
    private struct State {
        var events: [ServerEvent] = []
        var raw: [UInt8] = []
        var handshake: TLSHandshakeInfo?
    }

    private let state = Mutex(State())

    func append(_ event: ServerEvent) { state.withLock { $0.events.append(event) } }
    func appendRaw(_ bytes: ByteBuffer) { state.withLock { $0.raw.append(contentsOf: bytes.readableBytesView) } }
    func recordHandshake(_ info: TLSHandshakeInfo) { state.withLock { $0.handshake = info } }

    var handshake: TLSHandshakeInfo? { state.withLock { $0.handshake } }
    /// What arrived since the start, decrypted, as text (stream restarts included).
    var rawText: String { state.withLock { String(decoding: $0.raw, as: UTF8.self) } }

    func popFirst() -> ServerEvent? {
        state.withLock { $0.events.isEmpty ? nil : $0.events.removeFirst() }
    }

    /// The next event, waiting up to `timeout`; nil if none came.
    func next(timeout: Duration) async -> ServerEvent? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let event = popFirst() { return event }
            if ContinuousClock.now >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }
}

/// The tail of a scenario client's pipeline: parses what the server sends with the same
/// `XMLStreamParser` the server uses and queues the events. A client knows where the server's
/// stream restarts (after `<proceed/>` and SASL `<success/>`), so it resets the parser there.
final class ClientStreamHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let queue: ServerEventQueue
    private let parser = XMLStreamParser(limits: .init(maxStanzaBytes: 1 << 22, maxDepth: 64))
    private var failed = false

    init(queue: ServerEventQueue) {
        self.queue = queue
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        queue.appendRaw(buffer)
        while buffer.readableBytes > 0, !failed {
            var restart = false
            do {
                let consumed = try buffer.withUnsafeReadableBytes { bytes throws(StreamError) in
                    try parser.feed(bytes) { event in
                        queue.append(Self.convert(event))
                        restart = Self.restartsStream(event)
                        return restart ? .stop : .continue
                    }
                }
                buffer.moveReaderIndex(forwardBy: consumed)
            } catch {
                failed = true
                queue.append(.malformed(error))
            }
            guard restart else { break }
            parser.reset()
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        queue.append(.closed)
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted(let info)? = event as? TLSEvent { queue.recordHandshake(info) }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // TLS errors (for example an unexpected EOF after a stream error) end the connection;
        // the test sees that as `.closed`.
        context.close(promise: nil)
    }

    private static func convert(_ event: XMLStreamEvent) -> ServerEvent {
        switch event {
        case .streamOpened(let header): .header(header)
        case .stanza(let element): .element(element)
        case .streamClosed: .streamClosed
        }
    }

    private static func restartsStream(_ event: XMLStreamEvent) -> Bool {
        guard case .stanza(let element) = event else { return false }
        return (element.namespace == XMLNamespace.tls && element.name == "proceed")
            || (element.namespace == XMLNamespace.sasl && element.name == "success")
    }
}
