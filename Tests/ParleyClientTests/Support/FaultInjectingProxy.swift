import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ParleyTestSupport

/// A TCP proxy on 127.0.0.1 that cuts the connections passing through it at random moments,
/// as a mobile network does: after a random number of bytes (so mostly in the middle of a
/// stanza, or of a TLS record), and right after a chunk carrying a `<message` (so between a
/// message and its acknowledgement) — in either direction, with no warning to the XMPP layer
/// on either side. Decisions come from one seeded generator.
final class FaultInjectingProxy: Sendable {
    struct Plan: Sendable {
        /// Each connection is cut after a number of bytes drawn uniformly from this range.
        var bytesBeforeCut: ClosedRange<Int> = 2_000...60_000
        /// The chance that a chunk holding a message is the last before a cut (when it is
        /// the client's, before the server's acknowledgement comes back).
        var cutAfterMessage = 0.02
    }

    let port: Int
    private let channel: any Channel
    private let state: NIOLockedValueBox<State>

    struct State {
        var generator: SeededGenerator
        var plan: Plan
        var cutting = true
        var connections = 0
        var cuts = 0
        var cutsMidChunk = 0
        var cutsAfterMessage = 0
    }

    struct Counts: Sendable, CustomStringConvertible {
        var connections: Int
        var cuts: Int
        var cutsMidChunk: Int
        var cutsAfterMessage: Int
        var description: String {
            "\(connections) connections, \(cuts) cut (\(cutsMidChunk) mid-chunk, \(cutsAfterMessage) right after a message)"
        }
    }

    private init(port: Int, channel: any Channel, state: NIOLockedValueBox<State>) {
        self.port = port
        self.channel = channel
        self.state = state
    }

    static func start(upstreamPort: Int, seed: UInt64, plan: Plan = Plan(), group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton)
        async throws -> FaultInjectingProxy
    {
        let state = NIOLockedValueBox(State(generator: SeededGenerator(seed: seed), plan: plan))
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { inbound in
                let budget = state.withLockedValue { state -> Int in
                    state.connections += 1
                    return Int.random(in: state.plan.bytesBeforeCut, using: &state.generator)
                }
                let link = ProxyLink(budget: budget, state: state)
                return ClientBootstrap(group: inbound.eventLoop)
                    .channelOption(.socketOption(.tcp_nodelay), value: 1)
                    .connect(host: "127.0.0.1", port: upstreamPort)
                    .flatMapThrowing { outbound in
                        try outbound.pipeline.syncOperations.addHandler(ForwardingHandler(link: link, partner: inbound, towardsServer: false))
                        try inbound.pipeline.syncOperations.addHandler(ForwardingHandler(link: link, partner: outbound, towardsServer: true))
                    }
            }
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .bind(host: "127.0.0.1", port: 0).get()
        return FaultInjectingProxy(port: channel.localAddress!.port!, channel: channel, state: state)
    }

    /// Stops or resumes cutting (connections already cut stay cut).
    func setCutting(_ cutting: Bool) {
        state.withLockedValue { $0.cutting = cutting }
    }

    var counts: Counts {
        state.withLockedValue { Counts(connections: $0.connections, cuts: $0.cuts, cutsMidChunk: $0.cutsMidChunk, cutsAfterMessage: $0.cutsAfterMessage) }
    }

    func stop() async {
        try? await channel.close()
    }

    /// The two halves of one proxied connection share its byte budget.
    final class ProxyLink: @unchecked Sendable {
        // Both halves run on the same event loop (the upstream connection is made on the
        // accepted connection's loop), so `remaining` needs no lock.
        var remaining: Int
        var cut = false
        let state: NIOLockedValueBox<State>

        init(budget: Int, state: NIOLockedValueBox<State>) {
            self.remaining = budget
            self.state = state
        }

        /// How many bytes of this chunk to pass on before cutting, or nil to pass it all.
        func cutPoint(for chunk: ByteBuffer) -> Int? {
            let (cutting, chance, roll) = state.withLockedValue { ($0.cutting, $0.plan.cutAfterMessage, $0.generator.nextDouble()) }
            guard cutting else { return nil }
            remaining -= chunk.readableBytes
            if remaining < 0 {
                state.withLockedValue {
                    $0.cuts += 1
                    $0.cutsMidChunk += 1
                }
                return chunk.readableBytes + remaining
            }
            if roll < chance, chunk.readableBytesView.firstRange(of: Array("<message".utf8)) != nil {
                state.withLockedValue {
                    $0.cuts += 1
                    $0.cutsAfterMessage += 1
                }
                return chunk.readableBytes
            }
            return nil
        }
    }

    final class ForwardingHandler: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let link: ProxyLink
        let partner: any Channel
        let towardsServer: Bool

        init(link: ProxyLink, partner: any Channel, towardsServer: Bool) {
            self.link = link
            self.partner = partner
            self.towardsServer = towardsServer
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard !link.cut else { return }
            var chunk = unwrapInboundIn(data)
            // Only plaintext XML shows `<message`; inside TLS the byte budget does the cutting.
            guard let keep = link.cutPoint(for: chunk) else {
                partner.writeAndFlush(chunk, promise: nil)
                return
            }
            link.cut = true
            let head = chunk.readSlice(length: max(0, keep))!
            let partner = self.partner
            let channel = context.channel
            partner.writeAndFlush(head).whenComplete { _ in
                // No `</stream:stream>` and no TLS close_notify on either side: the XMPP layers
                // see only TCP going away, as when a phone loses its network.
                partner.close(promise: nil)
                channel.close(promise: nil)
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            partner.close(promise: nil)
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }
}
