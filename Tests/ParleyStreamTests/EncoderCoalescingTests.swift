import NIOCore
import NIOEmbedded
import ParleyCore
import ParleyStream
import Testing

/// `XMLStreamEncoder` hands on one buffer per flush, however many outputs were written
/// since the last one (a room's occupant list for a newcomer is hundreds of stanzas in one
/// tick), and never one larger than it must be.
@Suite struct EncoderCoalescingTests {
    static func encoderChannel() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(XMLStreamEncoder())
        return channel
    }

    static func presence(_ number: Int) -> XMLElement {
        XMLElement("presence", namespace: XMLNamespace.client, ["from": "room@conference.example/occupant\(number)"], [])
    }

    static func outbound(_ channel: EmbeddedChannel) throws -> [String] {
        var buffers: [String] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { buffers.append(String(buffer: buffer)) }
        return buffers
    }

    @Test func writesBetweenTwoFlushesLeaveAsOneBuffer() throws {
        let channel = try Self.encoderChannel()
        channel.write(XMLStreamOutput.open(StreamOpening(from: "example.com", id: "c1")), promise: nil)
        for number in 0..<3 { channel.write(XMLStreamOutput.element(Self.presence(number)), promise: nil) }
        channel.write(XMLStreamOutput.whitespace, promise: nil)
        #expect(try Self.outbound(channel).isEmpty, "nothing before the flush")

        channel.flush()
        let buffers = try Self.outbound(channel)
        #expect(buffers.count == 1)
        #expect(buffers.first?.hasPrefix("<?xml version='1.0'?><stream:stream ") == true)
        #expect(
            buffers.first?.hasSuffix(
                "<presence from='room@conference.example/occupant0'/><presence from='room@conference.example/occupant1'/>"
                    + "<presence from='room@conference.example/occupant2'/> ") == true)

        // The next flush starts afresh.
        channel.write(XMLStreamOutput.close, promise: nil)
        channel.flush()
        #expect(try Self.outbound(channel) == ["</stream:stream>"])
    }

    @Test func everyWritesPromiseCompletesWhenItsBytesAreWritten() throws {
        let channel = try Self.encoderChannel()
        let promises = (0..<3).map { _ in channel.eventLoop.makePromise(of: Void.self) }
        var completed = 0
        for (number, promise) in promises.enumerated() {
            promise.futureResult.whenSuccess { completed += 1 }
            channel.write(XMLStreamOutput.element(Self.presence(number)), promise: promise)
        }
        #expect(completed == 0)
        channel.flush()
        #expect(completed == 3)
        #expect(try Self.outbound(channel).count == 1)
    }

    /// A long burst is passed on in pieces of about `coalescingLimit`, not as one buffer as
    /// large as the burst; no stanza is split between two.
    @Test func aLongBurstIsWrittenInPiecesOfTheLimit() throws {
        let channel = try Self.encoderChannel()
        let count = 3_000
        for number in 0..<count { channel.write(XMLStreamOutput.element(Self.presence(number)), promise: nil) }
        channel.flush()
        let buffers = try Self.outbound(channel)
        let stanzaBytes = "<presence from='room@conference.example/occupant0000'/>".utf8.count
        #expect(buffers.count >= count * (stanzaBytes - 3) / XMLStreamEncoder.coalescingLimit)
        #expect(buffers.count <= count * stanzaBytes / XMLStreamEncoder.coalescingLimit + 1)
        for buffer in buffers {
            #expect(buffer.utf8.count < XMLStreamEncoder.coalescingLimit + stanzaBytes)
            #expect(buffer.hasPrefix("<presence ") && buffer.hasSuffix("/>"))
        }
        let all = buffers.joined()
        #expect(all.components(separatedBy: "<presence ").count - 1 == count)
        #expect(all.hasSuffix("occupant\(count - 1)'/>"))
    }

    /// Records what passes below the encoder, writes and outbound events, in order.
    final class OutboundOrder: ChannelOutboundHandler {
        typealias OutboundIn = ByteBuffer
        var seen: [String] = []

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            seen.append(String(buffer: unwrapOutboundIn(data)))
            context.write(data, promise: promise)
        }

        func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
            seen.append("event")
            context.triggerUserOutboundEvent(event, promise: promise)
        }
    }

    /// The keepalive below must see `<success/>` before the `AwaitingHeader` that follows it,
    /// or it would send whitespace ahead of the next stream header.
    @Test func anOutboundEventDoesNotOvertakeWhatWasWrittenBeforeIt() throws {
        let channel = EmbeddedChannel()
        let order = OutboundOrder()
        try channel.pipeline.syncOperations.addHandler(order)
        try channel.pipeline.syncOperations.addHandler(XMLStreamEncoder())
        channel.write(XMLStreamOutput.element(XMLElement("success", namespace: XMLNamespace.sasl, [:], [])), promise: nil)
        channel.pipeline.triggerUserOutboundEvent(StreamKeepaliveHandler.AwaitingHeader(), promise: nil)
        channel.write(XMLStreamOutput.whitespace, promise: nil)
        channel.flush()
        #expect(order.seen == ["<success xmlns='urn:ietf:params:xml:ns:xmpp-sasl'/>", "event", " "])
    }

    /// As NIO does with writes it was never asked to flush: closing drops them and fails their
    /// promises.
    @Test func closingBeforeTheFlushFailsThePendingWrites() throws {
        let channel = try Self.encoderChannel()
        let promise = channel.eventLoop.makePromise(of: Void.self)
        var failure: (any Error)?
        promise.futureResult.whenFailure { failure = $0 }
        channel.write(XMLStreamOutput.element(Self.presence(1)), promise: promise)
        _ = try? channel.close().wait()
        #expect(failure as? ChannelError == .ioOnClosedChannel)
        #expect(try Self.outbound(channel).isEmpty)
    }
}
