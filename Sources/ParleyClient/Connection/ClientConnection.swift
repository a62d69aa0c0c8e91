import NIOCore
import NIOPosix
import ParleyCore
import ParleyStream
import ParleyTLS

/// One connection to a server (TCP, TLS, or a WebSocket), negotiated up to a bound session.
final class ClientConnection: Sendable {
    let channel: any Channel

    init(channel: any Channel) {
        self.channel = channel
    }

    /// Connects and starts negotiating; the callbacks run on the connection's event loop.
    static func open(
        configuration: ClientConfiguration, tls: TLSContext?, group: any EventLoopGroup, registersAccount: Bool = false,
        resumption: ResumptionRequest? = nil, callbacks: @escaping @Sendable () -> ClientStreamHandler.Callbacks
    ) async throws -> ClientConnection {
        if let url = configuration.webSocketEndpoint {
            return try await openWebSocket(
                url, configuration: configuration, tls: tls, group: group, registersAccount: registersAccount, resumption: resumption,
                callbacks: callbacks)
        }
        let keepalive = StreamKeepaliveHandler.Configuration(
            whitespaceInterval: nil, pingAfter: TimeAmount(configuration.heartbeatInterval),
            idleTimeout: TimeAmount(configuration.heartbeatInterval + configuration.heartbeatTimeout))
        let timeout = TimeAmount(configuration.connectTimeout)
        let channel = try await ClientBootstrap(group: group)
            .connectTimeout(timeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if configuration.security == .directTLS, let tls {
                        try pipeline.addHandler(TLSHandler(context: tls, serverName: configuration.jid.domainpart))
                    }
                    try pipeline.addHandler(StreamKeepaliveHandler(configuration: keepalive))
                    try pipeline.addHandler(XMLStreamDecoder())
                    try pipeline.addHandler(XMLStreamEncoder())
                    try pipeline.addHandler(
                        ClientStreamHandler(
                            configuration: configuration, tls: tls, registersAccount: registersAccount, resumption: resumption,
                            callbacks: callbacks()))
                }
            }
            .connect(host: configuration.serverHost, port: configuration.serverPort).get()
        return ClientConnection(channel: channel)
    }

    func send(_ stanza: XMLElement) {
        channel.writeAndFlush(XMLStreamOutput.element(stanza), promise: nil)
    }

    /// `close()`, then waits until the connection is closed, or `timeout` has passed.
    func closeGracefully(timeout: Duration = .seconds(1)) async {
        close()
        let channel = self.channel
        let timer = channel.eventLoop.scheduleTask(in: TimeAmount(timeout)) { channel.close(promise: nil) }
        try? await channel.closeFuture.get()
        timer.cancel()
    }

    /// Ends the stream politely: `</stream:stream>` (a WebSocket's `<close/>` and close frame),
    /// then the TCP (and TLS) close.
    func close() {
        let channel = self.channel
        channel.writeAndFlush(XMLStreamOutput.close).whenComplete { _ in
            channel.close(promise: nil)
        }
    }
}

extension TimeAmount {
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
