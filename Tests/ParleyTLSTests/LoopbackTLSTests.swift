import NIOCore
import NIOPosix
import ParleyTLS
import Testing

/// Echoes decrypted bytes back, reports its handshake, and how its connection ended: the
/// error seen before the transport closed, if any (`unexpectedEOF` when no close_notify came).
private final class EchoHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let handshake: EventLoopPromise<TLSHandshakeInfo>
    let ended: EventLoopPromise<String?>?
    private var lastError: String?

    init(handshake: EventLoopPromise<TLSHandshakeInfo>, ended: EventLoopPromise<String?>? = nil) {
        self.handshake = handshake
        self.ended = ended
    }

    func channelInactive(context: ChannelHandlerContext) {
        ended?.succeed(lastError)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.writeAndFlush(data, promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted(let info)? = event as? TLSEvent {
            handshake.succeed(info)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        lastError = "\(error)"
        handshake.fail(error)
    }
}

/// Collects `expected` bytes, then fulfils `received`.
private final class CollectingHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    let expected: Int
    let received: EventLoopPromise<String>
    let handshake: EventLoopPromise<TLSHandshakeInfo>
    private var text = ""

    init(expected: Int, received: EventLoopPromise<String>, handshake: EventLoopPromise<TLSHandshakeInfo>) {
        self.expected = expected
        self.received = received
        self.handshake = handshake
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        text += String(buffer: unwrapInboundIn(data))
        if text.utf8.count >= expected { received.succeed(text) }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted(let info)? = event as? TLSEvent {
            handshake.succeed(info)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        handshake.fail(error)
        received.fail(error)
    }
}

@Suite struct LoopbackTLSTests {
    /// The client's close timeout is far longer than the time limit: its close can only
    /// complete in time if the server answers the close_notify.
    @Test(.timeLimit(.minutes(1))) func echoOverRealSockets() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let serverContext = try TestCertificates.serverContext()
        let clientContext = try TestCertificates.trustingClientContext(alpn: ["xmpp-client"])
        let serverHandshake = group.next().makePromise(of: TLSHandshakeInfo.self)
        let serverEnded = group.next().makePromise(of: String?.self)
        let serverChild = group.next().makePromise(of: Channel.self)

        let server = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(TLSHandler(context: serverContext))
                    try channel.pipeline.syncOperations.addHandler(EchoHandler(handshake: serverHandshake, ended: serverEnded))
                    serverChild.succeed(channel)
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(server.localAddress?.port)

        let message = String(repeating: "<message to='juliet@example.test'><body>hi</body></message>", count: 500)
        let received = group.next().makePromise(of: String.self)
        let clientHandshake = group.next().makePromise(of: TLSHandshakeInfo.self)
        let client = try await ClientBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        TLSHandler(context: clientContext, serverName: TestCertificates.domain, closeTimeout: .hours(1)))
                    try channel.pipeline.syncOperations.addHandler(
                        CollectingHandler(expected: message.utf8.count, received: received, handshake: clientHandshake))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()

        // Written at once: held by the client handler until the handshake completes.
        try await client.writeAndFlush(ByteBuffer(string: message)).get()
        #expect(try await received.futureResult.get() == message)

        let clientInfo = try await clientHandshake.futureResult.get()
        let serverInfo = try await serverHandshake.futureResult.get()
        #expect(clientInfo.negotiatedALPN == "xmpp-client")
        #expect(serverInfo.negotiatedALPN == "xmpp-client")
        #expect(clientInfo.tlsExporter != nil)
        #expect(clientInfo.tlsExporter == serverInfo.tlsExporter)

        // The exporter through the handler API, on each channel's own event loop.
        let child = try await serverChild.futureResult.get()
        let clientBinding = try await client.eventLoop.submit {
            try client.pipeline.syncOperations.handler(type: TLSHandler.self).channelBindingTLSExporter()
        }.get()
        let serverBinding = try await child.eventLoop.submit {
            try child.pipeline.syncOperations.handler(type: TLSHandler.self).channelBindingTLSExporter()
        }.get()
        #expect(clientBinding == serverBinding)
        #expect(clientBinding == clientInfo.tlsExporter)

        // A clean close: the server sees the client's close_notify (no truncation error) and
        // answers it, which is what lets the client's close finish.
        try await client.close().get()
        try await child.closeFuture.get()
        #expect(try await serverEnded.futureResult.get() == nil)

        try await server.close().get()
        try await group.shutdownGracefully()
    }

    @Test func untrustedServerFailsTheClientConnect() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let serverContext = try TestCertificates.serverContext()
        let clientContext = try TLSContext(client: TLSClientConfiguration(trust: .systemDefault))
        let server = try await ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(TLSHandler(context: serverContext))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(server.localAddress?.port)
        let received = group.next().makePromise(of: String.self)
        let handshake = group.next().makePromise(of: TLSHandshakeInfo.self)
        let client = try await ClientBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        TLSHandler(context: clientContext, serverName: TestCertificates.domain))
                    try channel.pipeline.syncOperations.addHandler(
                        CollectingHandler(expected: 1, received: received, handshake: handshake))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()

        await #expect(throws: TLSError.certificateUntrusted(
            reason: "self-signed certificate", fingerprint: TestCertificates.server.fingerprint)
        ) {
            try await handshake.futureResult.get()
        }
        try await client.closeFuture.get()
        try await server.close().get()
        try await group.shutdownGracefully()
    }
}
