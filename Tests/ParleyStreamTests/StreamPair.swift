import NIOCore
import NIOEmbedded
import ParleyCore
import ParleyStream

/// Two EmbeddedChannels back to back, each with decoder → encoder → negotiator: whatever one
/// writes, the other reads. Every buffer moved is kept, to check what crossed in the clear.
final class StreamPair {
    let client = EmbeddedChannel()
    let server = EmbeddedChannel()
    let clientNegotiator: ClientStartTLS
    let serverNegotiator: ServerStartTLS
    /// The raw bytes that crossed, in order, each tagged with its direction.
    private(set) var wire: [(fromClient: Bool, bytes: ByteBuffer)] = []

    init(stanzas: [XMLElement]) throws {
        clientNegotiator = ClientStartTLS(tlsContext: try StreamTestCertificates.clientContext(), stanzas: stanzas)
        serverNegotiator = ServerStartTLS(tlsContext: try StreamTestCertificates.serverContext())
        try client.pipeline.syncOperations.addStreamHandlers(clientNegotiator)
        try server.pipeline.syncOperations.addStreamHandlers(serverNegotiator)
    }

    func connect() throws {
        let address = try SocketAddress(ipAddress: "127.0.0.1", port: 5222)
        try server.connect(to: address).wait()
        try client.connect(to: address).wait()
    }

    /// Moves buffers both ways until neither side has anything left to send.
    func shuttle() throws {
        while try move(from: client, to: server, fromClient: true) + move(from: server, to: client, fromClient: false) > 0 {}
    }

    /// Moves one side's pending output, letting `transform` rewrite it first.
    @discardableResult
    func move(
        from source: EmbeddedChannel, to destination: EmbeddedChannel, fromClient: Bool,
        transform: (ByteBuffer) -> ByteBuffer = { $0 }
    ) throws -> Int {
        var count = 0
        while let buffer = try source.readOutbound(as: ByteBuffer.self) {
            count += 1
            let sent = transform(buffer)
            wire.append((fromClient, sent))
            guard destination.isActive else { continue }
            try destination.writeInbound(sent)
        }
        return count
    }

    /// Everything that crossed, as text (TLS records come out as noise).
    func transcript(fromClient: Bool) -> String {
        wire.filter { $0.fromClient == fromClient }.map { String(decoding: $0.bytes.readableBytesView, as: UTF8.self) }
            .joined()
    }
}
