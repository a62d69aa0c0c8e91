import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A TCP proxy on 127.0.0.1 in front of a plaintext XMPP server that plays a server whose
/// resumed sessions are dead (Prosody 0.12 after a connection dropped mid-stanza): it passes a
/// client's `<resume/>` and everything the server sends, but nothing the client sends after
/// its `<resume/>` on that connection reaches the server.
final class ResumeSwallowingProxy: Sendable {
    let port: Int
    private let channel: any Channel
    private let open: NIOLockedValueBox<[any Channel]>

    private init(port: Int, channel: any Channel, open: NIOLockedValueBox<[any Channel]>) {
        self.port = port
        self.channel = channel
        self.open = open
    }

    static func start(upstreamPort: Int, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) async throws -> ResumeSwallowingProxy {
        let open = NIOLockedValueBox<[any Channel]>([])
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { inbound in
                open.withLockedValue { $0.append(inbound) }
                return ClientBootstrap(group: inbound.eventLoop)
                    .connect(host: "127.0.0.1", port: upstreamPort)
                    .flatMapThrowing { outbound in
                        try outbound.pipeline.syncOperations.addHandler(Relay(partner: inbound, swallowsAfterResume: false))
                        try inbound.pipeline.syncOperations.addHandler(Relay(partner: outbound, swallowsAfterResume: true))
                    }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return ResumeSwallowingProxy(port: channel.localAddress!.port!, channel: channel, open: open)
    }

    /// Drops every connection now, with no goodbye on either side.
    func cutAll() {
        let channels = open.withLockedValue { channels in
            defer { channels = [] }
            return channels
        }
        for channel in channels { channel.close(promise: nil) }
    }

    func stop() async {
        cutAll()
        try? await channel.close()
    }

    private final class Relay: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        let partner: any Channel
        let swallowsAfterResume: Bool
        // Touched only on the connection's event loop.
        var swallowing = false

        init(partner: any Channel, swallowsAfterResume: Bool) {
            self.partner = partner
            self.swallowsAfterResume = swallowsAfterResume
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard !swallowing else { return }
            let chunk = unwrapInboundIn(data)
            partner.writeAndFlush(chunk, promise: nil)
            if swallowsAfterResume, chunk.readableBytesView.firstRange(of: Array("<resume ".utf8)) != nil {
                swallowing = true
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
