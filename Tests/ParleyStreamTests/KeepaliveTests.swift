import NIOCore
import NIOEmbedded
import ParleyCore
import ParleyStream
import Testing

/// `StreamKeepaliveHandler` against the EmbeddedEventLoop's clock: time only moves when the
/// test says so.
@Suite struct KeepaliveTests {
    /// Records what passes the handler inbound: bytes, user events, errors.
    final class Recorder: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer

        var reads = 0
        var peerIdle = 0
        var errors: [any Error] = []

        func channelRead(context: ChannelHandlerContext, data: NIOAny) { reads += 1 }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if event is StreamKeepaliveHandler.PeerIdle { peerIdle += 1 }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) { errors.append(error) }
    }

    struct Harness {
        let channel = EmbeddedChannel()
        let recorder = Recorder()

        init(
            whitespace: TimeAmount? = nil, pingAfter: TimeAmount? = nil, idleTimeout: TimeAmount? = nil
        ) throws {
            let configuration = StreamKeepaliveHandler.Configuration(
                whitespaceInterval: whitespace, pingAfter: pingAfter, idleTimeout: idleTimeout)
            try channel.pipeline.syncOperations.addHandler(StreamKeepaliveHandler(configuration: configuration))
            try channel.pipeline.syncOperations.addHandler(recorder)
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 5222)).wait()
        }

        func advance(_ seconds: Int64) {
            channel.embeddedEventLoop.advanceTime(by: .seconds(seconds))
        }

        /// The whitespace keepalives written since the last call (anything else fails).
        func keepalives() throws -> Int {
            var count = 0
            while let buffer = try channel.readOutbound(as: ByteBuffer.self) {
                #expect(String(buffer: buffer) == " ")
                count += 1
            }
            return count
        }

        func peerSends() throws {
            try channel.writeInbound(ByteBuffer(string: "<presence/>"))
        }

        func weSend() throws {
            try channel.writeAndFlush(ByteBuffer(string: "<message/>")).wait()
            #expect(try channel.readOutbound(as: ByteBuffer.self).map { String(buffer: $0) } == "<message/>")
        }

        var timeouts: [StreamError] {
            recorder.errors.compactMap { $0 as? StreamError }.filter { $0.condition == .connectionTimeout }
        }
    }

    @Test func whitespaceAfterTheIntervalWithoutWrites() throws {
        let harness = try Harness(whitespace: .seconds(10))
        harness.advance(9)
        #expect(try harness.keepalives() == 0)
        harness.advance(1)
        #expect(try harness.keepalives() == 1)
        harness.advance(10)
        #expect(try harness.keepalives() == 1)
        harness.advance(35)
        #expect(try harness.keepalives() == 3)
    }

    @Test func writesPostponeTheWhitespace() throws {
        let harness = try Harness(whitespace: .seconds(10))
        harness.advance(6)
        try harness.weSend()
        harness.advance(6)  // 12 s after start, 6 s after our write
        #expect(try harness.keepalives() == 0)
        harness.advance(3)
        #expect(try harness.keepalives() == 0)
        harness.advance(1)  // 10 s after the write
        #expect(try harness.keepalives() == 1)
    }

    /// Reads are not writes: a chatty peer does not stop our keepalives.
    @Test func readsDoNotPostponeTheWhitespace() throws {
        let harness = try Harness(whitespace: .seconds(10))
        for _ in 0..<5 {
            harness.advance(2)
            try harness.peerSends()
        }
        #expect(try harness.keepalives() == 1)
        #expect(harness.recorder.reads == 5)
    }

    @Test func peerIdleFiresOnceAfterSilence() throws {
        let harness = try Harness(pingAfter: .seconds(30))
        harness.advance(29)
        #expect(harness.recorder.peerIdle == 0)
        harness.advance(1)
        #expect(harness.recorder.peerIdle == 1)
        harness.advance(300)
        #expect(harness.recorder.peerIdle == 1)
    }

    /// After a sign of life, a new spell of silence earns a new PeerIdle, `pingAfter` after it.
    @Test(arguments: [nil, 7] as [Int64?])
    func peerIdleAgainOnlyAfterNewReadsThenSilence(whitespace: Int64?) throws {
        let harness = try Harness(whitespace: whitespace.map { .seconds($0) }, pingAfter: .seconds(30))
        harness.advance(30)
        #expect(harness.recorder.peerIdle == 1)
        harness.advance(15)
        try harness.peerSends()  // t = 45
        harness.advance(29)
        #expect(harness.recorder.peerIdle == 1)
        harness.advance(1)  // t = 75, 30 s after the read
        #expect(harness.recorder.peerIdle == 2)
        harness.advance(100)
        #expect(harness.recorder.peerIdle == 2)
    }

    @Test func readsPostponePeerIdle() throws {
        let harness = try Harness(pingAfter: .seconds(30))
        for _ in 0..<10 {
            harness.advance(20)
            try harness.peerSends()
        }
        #expect(harness.recorder.peerIdle == 0)
        harness.advance(30)
        #expect(harness.recorder.peerIdle == 1)
    }

    @Test func idleTimeoutIsAConnectionTimeoutStreamError() throws {
        let harness = try Harness(idleTimeout: .seconds(60))
        harness.advance(59)
        #expect(harness.recorder.errors.isEmpty)
        harness.advance(1)
        #expect(harness.timeouts.count == 1)
        #expect(harness.recorder.errors.count == 1)
        harness.advance(600)
        #expect(harness.recorder.errors.count == 1, "reported once")
    }

    @Test func readsPostponeTheIdleTimeoutButWritesDoNot() throws {
        let harness = try Harness(idleTimeout: .seconds(60))
        harness.advance(50)
        try harness.peerSends()
        harness.advance(50)
        try harness.weSend()
        harness.advance(9)  // t = 109, 59 s after the read
        #expect(harness.recorder.errors.isEmpty)
        harness.advance(1)
        #expect(harness.timeouts.count == 1)
    }

    /// The default-shaped configuration: keepalives, then a PeerIdle, then the timeout.
    @Test func allThreeTogether() throws {
        let harness = try Harness(whitespace: .seconds(10), pingAfter: .seconds(30), idleTimeout: .seconds(60))
        harness.advance(30)
        #expect(try harness.keepalives() == 3)
        #expect(harness.recorder.peerIdle == 1)
        #expect(harness.recorder.errors.isEmpty)
        harness.advance(29)
        #expect(try harness.keepalives() == 2)
        #expect(harness.recorder.errors.isEmpty)
        harness.advance(1)
        #expect(harness.timeouts.count == 1)
        #expect(harness.recorder.peerIdle == 1)
    }

    @Test func nothingFiresAfterTheChannelCloses() throws {
        let harness = try Harness(whitespace: .seconds(10), pingAfter: .seconds(30), idleTimeout: .seconds(60))
        try harness.channel.close().wait()
        harness.advance(1000)
        #expect(try harness.keepalives() == 0)
        #expect(harness.recorder.peerIdle == 0)
        #expect(harness.recorder.errors.isEmpty)
    }

    @Test func nothingFiresAfterTheHandlerIsRemoved() throws {
        let harness = try Harness(whitespace: .seconds(10), idleTimeout: .seconds(60))
        let handler = try harness.channel.pipeline.syncOperations.handler(type: StreamKeepaliveHandler.self)
        try harness.channel.pipeline.syncOperations.removeHandler(handler).wait()
        harness.advance(1000)
        #expect(try harness.keepalives() == 0)
        #expect(harness.recorder.errors.isEmpty)
    }

    /// Added to a channel that is already active (as after STARTTLS), it starts at once.
    @Test func startsWhenAddedToAnActiveChannel() throws {
        let channel = EmbeddedChannel()
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 5222)).wait()
        channel.embeddedEventLoop.advanceTime(by: .seconds(100))
        try channel.pipeline.syncOperations.addHandler(
            StreamKeepaliveHandler(configuration: .init(whitespaceInterval: .seconds(10), pingAfter: nil, idleTimeout: nil)))
        channel.embeddedEventLoop.advanceTime(by: .seconds(9))
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(try channel.readOutbound(as: ByteBuffer.self).map { String(buffer: $0) } == " ")
    }
}
