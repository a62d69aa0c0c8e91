import NIOCore
import NIOEmbedded
import ParleyCore
import ParleyStream
import ParleyTestSupport
import ParleyTLS

/// Sits after the decoder: passes every event on (so tests can `readInbound`) and keeps what
/// does not travel as a read — errors and user events.
final class StreamProbe: ChannelInboundHandler {
    typealias InboundIn = XMLStreamEvent
    typealias InboundOut = XMLStreamEvent

    var errors: [any Error] = []
    var userEvents: [Any] = []

    var streamErrors: [StreamError] { errors.compactMap { $0 as? StreamError } }
    var peerIdleCount: Int { userEvents.filter { $0 is StreamKeepaliveHandler.PeerIdle }.count }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        errors.append(error)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        userEvents.append(event)
    }
}

/// Asks the decoder for a restart the moment it sees an element called `trigger`, as the
/// SASL or STARTTLS negotiator does, then passes the element on.
final class RestartOnElement: ChannelInboundHandler {
    typealias InboundIn = XMLStreamEvent
    typealias InboundOut = XMLStreamEvent

    let trigger: String
    let restart: XMLStreamDecoder.Restart

    init(_ trigger: String, restart: XMLStreamDecoder.Restart) {
        self.trigger = trigger
        self.restart = restart
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .stanza(let element) = unwrapInboundIn(data), element.name == trigger {
            context.triggerUserOutboundEvent(restart, promise: nil)
        }
        context.fireChannelRead(data)
    }
}

extension EmbeddedChannel {
    /// A channel whose pipeline is `handlers` followed by a fresh `StreamProbe`.
    static func decoding(
        limits: XMLStreamParser.Limits = .init(), before extra: [any ChannelHandler] = []
    ) throws -> (EmbeddedChannel, StreamProbe) {
        let channel = EmbeddedChannel()
        let probe = StreamProbe()
        try channel.pipeline.syncOperations.addHandler(XMLStreamDecoder(limits: limits))
        try channel.pipeline.syncOperations.addHandlers(extra)
        try channel.pipeline.syncOperations.addHandler(probe)
        return (channel, probe)
    }

    /// Writes `bytes` inbound in pieces of the given sizes (the last piece takes the rest).
    func feed(_ bytes: [UInt8], chunkSizes: some Sequence<Int>) throws {
        var offset = 0
        var sizes = chunkSizes.makeIterator()
        while offset < bytes.count {
            let size = min(sizes.next() ?? bytes.count, bytes.count - offset)
            try writeInbound(ByteBuffer(bytes: bytes[offset..<(offset + size)]))
            offset += size
        }
    }

    func feed(_ text: String) throws {
        try writeInbound(ByteBuffer(string: text))
    }

    /// Every event that reached the end of the pipeline so far.
    func drainEvents() throws -> [XMLStreamEvent] {
        var events: [XMLStreamEvent] = []
        while let event = try readInbound(as: XMLStreamEvent.self) { events.append(event) }
        return events
    }

    /// Everything written so far, as one string.
    func drainOutput() throws -> String {
        var text = ""
        while let buffer = try readOutbound(as: ByteBuffer.self) { text += String(buffer: buffer) }
        return text
    }
}

extension XMLStreamEvent {
    var element: XMLElement? {
        if case .stanza(let element) = self { return element }
        return nil
    }

    var header: XMLStreamHeader? {
        if case .streamOpened(let header) = self { return header }
        return nil
    }
}

/// Random chunk sizes in `range`, reproducible from `seed`.
func randomChunkSizes(seed: UInt64, in range: ClosedRange<Int> = 1...48) -> some Sequence<Int> {
    var generator = SeededGenerator(seed: seed)
    return AnySequence { AnyIterator { Int.random(in: range, using: &generator) } }
}
