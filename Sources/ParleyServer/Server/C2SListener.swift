import NIOCore
import NIOPosix
import ParleyCore
import ParleyStream
import ParleyTLS

/// Accepts client connections on one address and port, with STARTTLS offered in-stream or,
/// for XEP-0368 direct TLS, TLS from the first byte.
struct C2SListener {
    struct Settings: Sendable {
        var host: String
        var port: Int
        var directTLS: Bool
        var parserLimits: XMLStreamParser.Limits
        var keepalive: StreamKeepaliveHandler.Configuration
    }

    static func bind(
        _ settings: Settings, server: ServerContext, group: any EventLoopGroup
    ) async throws -> any Channel {
        if settings.directTLS, server.tls == nil {
            throw ListenerError.directTLSWithoutCertificate
        }
        let fallback = XMLStreamEncoder.Fallback(StreamOpening(from: server.policy.domain.description))
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(.socketOption(.so_keepalive), value: 1)
            .childChannelOption(.maxMessagesPerRead, value: 4)
            .childChannelOption(.writeBufferWaterMark, value: .init(low: 64 << 10, high: 1 << 20))
            // Stanzas are small and most connections idle: start reads small, grow on demand.
            // The channel keeps its last receive buffer for good, so its size is paid by every
            // idle session; a login's reads (headers, SASL, bind) are each under 256 bytes.
            // NIO's adaptive allocator, in a form the channel stores without a box of its own.
            .childChannelOption(.recvAllocator, value: CompactRecvByteBufferAllocator(minimum: 64, initial: 256, maximum: 65_536))
            .childChannelInitializer { [fallback] channel in
                channel.eventLoop.makeCompletedFuture {
                    try installPipeline(on: channel, settings: settings, server: server, fallback: fallback)
                    // Once the session handler is in: it takes the channel out when removed.
                    server.connections.trackUntilSessionHandlerRemoved(channel)
                }
            }
        return try await bootstrap.bind(host: settings.host, port: settings.port).get()
    }

    /// A client's libxml2 context (about 15 KB: its 8 KB input buffer, name dictionary and
    /// stacks) is given back after this much silence. At 2 s, a burst of logins kept two
    /// seconds' worth of contexts alive (thousands); freed when the burst ended, they left
    /// the heap full of holes between the sessions' long-lived objects, about 3.5 KB per
    /// session held (bench/README.md, "Logins and idle memory"). A client sending a burst
    /// keeps its context; one that pauses rebuilds it at its next byte.
    static let parserReleaseAfter = TimeAmount.milliseconds(100)
    /// A client that speaks again within 2 s of its context going is in use: its next release
    /// waits for 2 s of silence. At 100 ms, a client sending a message every few hundred ms (a room
    /// at 20 messages/s with four speakers) rebuilt its context, replayed its stream header
    /// and woke its loop's timer for every message (bench/README.md, "Twelfth round").
    static let parserReleaseAgainAfter = TimeAmount.seconds(2)

    static func installPipeline(
        on channel: any Channel, settings: Settings, server: ServerContext, fallback: XMLStreamEncoder.Fallback
    ) throws {
        let remote = channel.remoteAddress?.ipAddress ?? "unknown"
        let pipeline = channel.pipeline.syncOperations
        if settings.directTLS, let tls = server.tls {
            try pipeline.addHandler(TLSHandler(context: tls))
        }
        try pipeline.addHandler(StreamKeepaliveHandler(configuration: settings.keepalive))
        try pipeline.addHandler(XMLStreamDecoder(
            limits: settings.parserLimits, releaseMemoryAfter: parserReleaseAfter, releaseMemoryAgainAfter: parserReleaseAgainAfter))
        let encoder = XMLStreamEncoder(fallback: fallback)
        try pipeline.addHandler(encoder)
        // Next to each other, so the session may write to the encoder straight.
        try pipeline.addHandler(C2SSessionHandler(
                server: server, remoteAddress: remote, transport: settings.directTLS ? .directTLS : .tcp, encoder: encoder))
    }
}

enum ListenerError: Error, CustomStringConvertible {
    case directTLSWithoutCertificate

    var description: String {
        switch self {
        case .directTLSWithoutCertificate: "direct TLS needs a certificate, and none is configured"
        }
    }
}
