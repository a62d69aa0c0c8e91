import NIOCore
import NIOPosix
import ParleyTLS
import Testing

/// Echoes decrypted bytes back and reports its handshake.
private final class EchoHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let handshake: EventLoopPromise<TLSHandshakeInfo>

    init(handshake: EventLoopPromise<TLSHandshakeInfo>) {
        self.handshake = handshake
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
    @Test func echoOverRealSockets() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let serverContext = try TestCertificates.serverContext()
        let clientContext = try TestCertificates.trustingClientContext(alpn: ["xmpp-client"])
        let serverHandshake = group.next().makePromise(of: TLSHandshakeInfo.self)
        let serverChild = group.next().makePromise(of: Channel.self)

        let server = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(TLSHandler(context: serverContext))
                    try channel.pipeline.syncOperations.addHandler(EchoHandler(handshake: serverHandshake))
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
                        TLSHandler(context: clientContext, serverName: TestCertificates.domain, closeTimeout: .seconds(3)))
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

        // A clean close is answered by the server's close_notify well before the timeout.
        let start = ContinuousClock.now
        try await client.close().get()
        #expect(ContinuousClock.now - start < .seconds(2))
        try await child.closeFuture.get()

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
