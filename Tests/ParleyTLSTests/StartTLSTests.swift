import NIOCore
import NIOEmbedded
import ParleyTLS
import Testing

@Suite struct StartTLSTests {
    @Test func upgradeAfterPlaintextExchange() throws {
        let pair = try EmbeddedPair()
        try pair.connect()

        // RFC 6120 5.4: plaintext negotiation first.
        try pair.client.writeAndFlush(ByteBuffer(string: "<starttls xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>")).wait()
        try pair.shuttle()
        #expect(pair.serverRecorder.received == "<starttls xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>")

        // Server: write <proceed/> first, then insert TLS at .first.
        try pair.server.writeAndFlush(ByteBuffer(string: "<proceed xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>")).wait()
        try pair.server.pipeline.syncOperations.addHandler(
            TLSHandler(context: try TestCertificates.serverContext()), position: .first)
        // The <proceed/> left in plaintext, before any TLS record.
        let proceed = try #require(try pair.server.readOutbound(as: ByteBuffer.self))
        #expect(String(buffer: proceed).hasPrefix("<proceed"))
        try pair.client.writeInbound(proceed)
        #expect(pair.clientRecorder.received.hasSuffix("<proceed xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>"))

        // Client: on <proceed/>, insert TLS at .first; the handshake starts at once.
        try pair.client.pipeline.syncOperations.addHandler(
            TLSHandler(
                context: try TestCertificates.trustingClientContext(), serverName: TestCertificates.domain),
            position: .first)
        #expect(try pair.tlsHandler(pair.client).state == .handshaking)
        // The restarted stream header is written at once and held until the handshake is done.
        let header = pair.client.writeAndFlush(ByteBuffer(string: "<stream:stream to='example.test'>"))
        try pair.shuttle()
        try header.wait()

        #expect(pair.clientRecorder.handshakeInfo != nil)
        #expect(pair.serverRecorder.handshakeInfo != nil)
        #expect(pair.serverRecorder.received.hasSuffix("<stream:stream to='example.test'>"))

        try pair.server.writeAndFlush(ByteBuffer(string: "<stream:features/>")).wait()
        let record = try #require(try pair.server.readOutbound(as: ByteBuffer.self))
        #expect(!String(buffer: record).contains("features"))
        try pair.client.writeInbound(record)
        #expect(pair.clientRecorder.received.hasSuffix("<stream:features/>"))
        #expect(pair.clientRecorder.errors.isEmpty && pair.serverRecorder.errors.isEmpty)
    }
}
