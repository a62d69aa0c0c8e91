import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A TCP forwarder on 127.0.0.1 that plays a load balancer in front of a cluster: each new
/// connection goes to the node it currently points at; `cut()` drops every connection
/// passing through (no closing stanza on either side, as when a network goes away), and
/// `point(at:)` sends the next ones elsewhere.
final class SwitchingProxy: Sendable {
    let port: Int
    private let listener: any Channel
    private let state: NIOLockedValueBox<(upstream: Int, open: [any Channel])>

    private init(port: Int, listener: any Channel, state: NIOLockedValueBox<(upstream: Int, open: [any Channel])>) {
        self.port = port
        self.listener = listener
        self.state = state
    }

    static func start(upstreamPort: Int) async throws -> SwitchingProxy {
        let state = NIOLockedValueBox<(upstream: Int, open: [any Channel])>((upstreamPort, []))
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { inbound in
                let upstream = state.withLockedValue { state -> Int in
                    state.open.append(inbound)
                    return state.upstream
                }
                return ClientBootstrap(group: inbound.eventLoop)
                    .connect(host: "127.0.0.1", port: upstream)
                    .flatMapThrowing { outbound in
                        state.withLockedValue { $0.open.append(outbound) }
                        try outbound.pipeline.syncOperations.addHandler(Forward(partner: inbound))
                        try inbound.pipeline.syncOperations.addHandler(Forward(partner: outbound))
                    }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return SwitchingProxy(port: listener.localAddress!.port!, listener: listener, state: state)
    }

    func point(at upstreamPort: Int) {
        state.withLockedValue { $0.upstream = upstreamPort }
    }

    func cut() {
        let open = state.withLockedValue { state in
            defer { state.open = [] }
            return state.open
        }
        for channel in open { channel.close(promise: nil) }
    }

    func stop() async {
        cut()
        try? await listener.close()
    }

    private final class Forward: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let partner: any Channel

        init(partner: any Channel) { self.partner = partner }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            partner.writeAndFlush(unwrapInboundIn(data), promise: nil)
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
