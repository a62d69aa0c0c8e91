import NIOCore
import NIOEmbedded
import ParleyTLS

/// Collects what reaches the end of a pipeline: plaintext, TLS events, errors.
final class Recorder: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    var received = ""
    var events: [TLSEvent] = []
    var errors: [any Error] = []

    var handshakeInfo: TLSHandshakeInfo? {
        for case .handshakeCompleted(let info) in events { return info }
        return nil
    }
    var tlsErrors: [TLSError] { errors.compactMap { $0 as? TLSError } }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        received += String(buffer: unwrapInboundIn(data))
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSEvent { events.append(event) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        errors.append(error)
    }
}

/// Two EmbeddedChannels wired back to back: whatever one writes, the other reads, until
/// neither has anything left to say.
struct EmbeddedPair {
    let server = EmbeddedChannel()
    let client = EmbeddedChannel()
    let serverRecorder = Recorder()
    let clientRecorder = Recorder()

    init() throws {
        try server.pipeline.syncOperations.addHandler(serverRecorder)
        try client.pipeline.syncOperations.addHandler(clientRecorder)
    }

    /// Direct TLS: handlers present before the connection becomes active.
    static func direct(
        serverContext: TLSContext, clientContext: TLSContext, serverName: String? = TestCertificates.domain
    ) throws -> EmbeddedPair {
        let pair = try EmbeddedPair()
        try pair.server.pipeline.syncOperations.addHandler(TLSHandler(context: serverContext), position: .first)
        try pair.client.pipeline.syncOperations.addHandler(
            TLSHandler(context: clientContext, serverName: serverName), position: .first)
        try pair.connect()
        return pair
    }

    func connect() throws {
        let address = try SocketAddress(ipAddress: "127.0.0.1", port: 5222)
        try server.connect(to: address).wait()
        try client.connect(to: address).wait()
    }

    /// Returns how many buffers were moved in total.
    @discardableResult
    func shuttle() throws -> Int {
        var total = 0
        while true {
            let moved = try move(from: client, to: server) + move(from: server, to: client)
            if moved == 0 { return total }
            total += moved
        }
    }

    private func move(from source: EmbeddedChannel, to destination: EmbeddedChannel) throws -> Int {
        var count = 0
        while let buffer = try source.readOutbound(as: ByteBuffer.self) {
            count += 1
            // A closed peer drops late bytes, as a socket would.
            guard destination.isActive else { continue }
            try destination.writeInbound(buffer)
        }
        return count
    }

    func tlsHandler(_ channel: EmbeddedChannel) throws -> TLSHandler {
        try channel.pipeline.syncOperations.handler(type: TLSHandler.self)
    }
}
