import NIOCore
import NIOEmbedded
import ParleyCore
import ParleyStream
import Testing

/// When `XMLStreamDecoder` gives the parser's libxml2 context back, on the EmbeddedEventLoop's
/// clock: after the short delay (a login burst's sessions go quiet at once), and after the
/// long one for a stream that came back soon after its context went (a client in use keeps
/// its context between messages); a stream back after a long silence gets the short one.
@Suite struct DecoderIdleReleaseTests {
    static let header = "<?xml version='1.0'?><stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams' to='localhost' version='1.0'>"

    final class Counter: ChannelInboundHandler {
        typealias InboundIn = XMLStreamEvent
        var stanzas = 0
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            if case .stanza = unwrapInboundIn(data) { stanzas += 1 }
        }
    }

    struct Harness {
        let channel = EmbeddedChannel()
        let decoder: XMLStreamDecoder
        let counter = Counter()

        init(first: TimeAmount, again: TimeAmount?) throws {
            decoder = XMLStreamDecoder(releaseMemoryAfter: first, releaseMemoryAgainAfter: again)
            try channel.pipeline.syncOperations.addHandler(decoder)
            try channel.pipeline.syncOperations.addHandler(counter)
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 5222)).wait()
        }

        func send(_ text: String) throws { try channel.writeInbound(ByteBuffer(string: text)) }
        func advance(milliseconds: Int64) { channel.embeddedEventLoop.advanceTime(by: .milliseconds(milliseconds)) }
    }

    @Test func releasesAfterTheShortDelayFirstAndTheLongOneOnceTheStreamSpokeAgain() throws {
        let harness = try Harness(first: .milliseconds(100), again: .seconds(2))
        try harness.send(Self.header + "<presence/>")
        harness.advance(milliseconds: 60)
        #expect(harness.decoder.parserHoldsContext)
        harness.advance(milliseconds: 100)
        #expect(!harness.decoder.parserHoldsContext)

        // Spoke again: the context is rebuilt, and 100 ms of silence no longer lets it go.
        try harness.send("<message to='a@localhost'><body>1</body></message>")
        #expect(harness.decoder.parserHoldsContext)
        harness.advance(milliseconds: 300)
        try harness.send("<message to='a@localhost'><body>2</body></message>")
        harness.advance(milliseconds: 1_500)
        #expect(harness.decoder.parserHoldsContext)
        harness.advance(milliseconds: 600)
        #expect(!harness.decoder.parserHoldsContext)

        // And what was parsed across the releases is all there.
        try harness.send("<message to='a@localhost'><body>3</body></message>")
        #expect(harness.counter.stanzas == 4)
    }

    @Test func aStreamBackAfterALongSilenceGetsTheShortDelayAgain() throws {
        let harness = try Harness(first: .milliseconds(100), again: .seconds(2))
        try harness.send(Self.header + "<presence/>")
        harness.advance(milliseconds: 160)
        try harness.send("<presence/>")
        harness.advance(milliseconds: 160)
        #expect(harness.decoder.parserHoldsContext, "back within 2 s: in use")
        harness.advance(milliseconds: 2_000)
        #expect(!harness.decoder.parserHoldsContext)
        // A ping's answer after minutes of silence: back to the short delay.
        harness.advance(milliseconds: 120_000)
        try harness.send("<iq type='result' id='ping-1'/>")
        harness.advance(milliseconds: 160)
        #expect(!harness.decoder.parserHoldsContext)
        #expect(harness.counter.stanzas == 3)
    }

    @Test func withoutALongerDelayEveryReleaseWaitsTheSame() throws {
        let harness = try Harness(first: .milliseconds(100), again: nil)
        try harness.send(Self.header + "<presence/>")
        harness.advance(milliseconds: 160)
        #expect(!harness.decoder.parserHoldsContext)
        try harness.send("<presence/>")
        harness.advance(milliseconds: 160)
        #expect(!harness.decoder.parserHoldsContext)
        #expect(harness.counter.stanzas == 2)
    }

    @Test func aStanzaHalfInKeepsTheContextAndTheNextReadTriesAgain() throws {
        let harness = try Harness(first: .milliseconds(100), again: .seconds(2))
        try harness.send(Self.header + "<message to='a@localhost'><body>half")
        harness.advance(milliseconds: 160)
        #expect(harness.decoder.parserHoldsContext)
        try harness.send("</body></message>")
        harness.advance(milliseconds: 160)
        // Never released before, so the short delay still applies.
        #expect(!harness.decoder.parserHoldsContext)
        #expect(harness.counter.stanzas == 1)
    }
}
