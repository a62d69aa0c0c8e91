import NIOCore
import NIOEmbedded
import ParleyTLS
import Testing

@Suite struct EmbeddedTLSTests {
    @Test func handshakeAndEchoBothWays() throws {
        let pair = try EmbeddedPair.direct(
            serverContext: try TestCertificates.serverContext(),
            clientContext: try TestCertificates.trustingClientContext(alpn: ["xmpp-client"]))
        try pair.shuttle()

        #expect(try pair.tlsHandler(pair.server).state == .active)
        #expect(try pair.tlsHandler(pair.client).state == .active)
        let clientInfo = try #require(pair.clientRecorder.handshakeInfo)
        let serverInfo = try #require(pair.serverRecorder.handshakeInfo)
        #expect(clientInfo.protocolVersion == "TLSv1.3")
        #expect(clientInfo.peerCertificateFingerprint == TestCertificates.server.fingerprint)
        #expect(serverInfo.peerCertificateFingerprint == nil)

        try pair.client.writeAndFlush(ByteBuffer(string: "<stream:stream to='example.test'>")).wait()
        try pair.shuttle()
        #expect(pair.serverRecorder.received == "<stream:stream to='example.test'>")

        try pair.server.writeAndFlush(ByteBuffer(string: "<stream:stream from='example.test'>")).wait()
        try pair.shuttle()
        #expect(pair.clientRecorder.received == "<stream:stream from='example.test'>")

        // The wire must not carry plaintext.
        try pair.client.writeAndFlush(ByteBuffer(string: "secret-body")).wait()
        let ciphertext = try #require(try pair.client.readOutbound(as: ByteBuffer.self))
        #expect(!String(buffer: ciphertext).contains("secret-body"))
        try pair.server.writeInbound(ciphertext)
        #expect(pair.serverRecorder.received.hasSuffix("secret-body"))
        #expect(pair.clientRecorder.errors.isEmpty && pair.serverRecorder.errors.isEmpty)
    }

    @Test func largeWriteArrivesIntact() throws {
        let pair = try EmbeddedPair.direct(
            serverContext: try TestCertificates.serverContext(),
            clientContext: try TestCertificates.trustingClientContext())
        try pair.shuttle()
        let big = String(repeating: "0123456789abcdef", count: 10_000)  // 160 KB, many records
        try pair.client.writeAndFlush(ByteBuffer(string: big)).wait()
        try pair.shuttle()
        #expect(pair.serverRecorder.received == big)
    }

    @Test func writesBeforeHandshakeAreSentAfterIt() throws {
        let pair = try EmbeddedPair.direct(
            serverContext: try TestCertificates.serverContext(),
            clientContext: try TestCertificates.trustingClientContext())
        // The client's ClientHello is out, nothing answered yet.
        #expect(try pair.tlsHandler(pair.client).state == .handshaking)
        let first = pair.client.writeAndFlush(ByteBuffer(string: "early-1 "))
        let second = pair.client.writeAndFlush(ByteBuffer(string: "early-2"))
        let fromServer = pair.server.writeAndFlush(ByteBuffer(string: "server-early"))
        var firstDone = false
        first.assumeIsolated().whenSuccess { firstDone = true }
        #expect(!firstDone)

        try pair.shuttle()
        #expect(firstDone)
        try second.wait()
        try fromServer.wait()
        #expect(pair.serverRecorder.received == "early-1 early-2")
        #expect(pair.clientRecorder.received == "server-early")
    }

    @Test func alpnNegotiation() throws {
        // Offered and accepted.
        var pair = try EmbeddedPair.direct(
            serverContext: try TestCertificates.serverContext(),
            clientContext: try TestCertificates.trustingClientContext(alpn: ["xmpp-client"]))
        try pair.shuttle()
        #expect(pair.clientRecorder.handshakeInfo?.negotiatedALPN == "xmpp-client")
        #expect(pair.serverRecorder.handshakeInfo?.negotiatedALPN == "xmpp-client")
        #expect(try pair.tlsHandler(pair.server).negotiatedALPN == "xmpp-client")

        // Not offered at all: tolerated.
        pair = try EmbeddedPair.direct(
            serverContext: try TestCertificates.serverContext(),
            clientContext: try TestCertificates.trustingClientContext(alpn: []))
        try pair.shuttle()
        #expect(pair.serverRecorder.handshakeInfo != nil)
        #expect(pair.serverRecorder.handshakeInfo?.negotiatedALPN == nil)

        // Offered, but nothing we speak: tolerated without a selection.
        pair = try EmbeddedPair.direct(
            serverContext: try TestCertificates.serverContext(),
            clientContext: try TestCertificates.trustingClientContext(alpn: ["h2", "http/1.1"]))
        try pair.shuttle()
        #expect(pair.clientRecorder.handshakeInfo != nil)
        #expect(pair.clientRecorder.handshakeInfo?.negotiatedALPN == nil)

        // Server preference wins over the client's order.
        pair = try EmbeddedPair.direct(
            serverContext: try TestCertificates.serverContext(alpn: ["xmpp-client", "h2"]),
            clientContext: try TestCertificates.trustingClientContext(alpn: ["h2", "xmpp-client"]))
        try pair.shuttle()
        #expect(pair.clientRecorder.handshakeInfo?.negotiatedALPN == "xmpp-client")
    }

    @Test func tlsExporterMatchesOnBothSides() throws {
        let pair = try EmbeddedPair.direct(
            serverContext: try TestCertificates.serverContext(),
            clientContext: try TestCertificates.trustingClientContext())
        #expect(throws: TLSError.self) { try pair.tlsHandler(pair.client).channelBindingTLSExporter() }
        try pair.shuttle()
        let client = try pair.tlsHandler(pair.client).channelBindingTLSExporter()
        let server = try pair.tlsHandler(pair.server).channelBindingTLSExporter()
        #expect(client.count == 32)
        #expect(client == server)
        #expect(client != [UInt8](repeating: 0, count: 32))
        #expect(pair.clientRecorder.handshakeInfo?.tlsExporter == client)
        #expect(pair.serverRecorder.handshakeInfo?.tlsExporter == server)

        // Another connection binds to another value.
        let other = try EmbeddedPair.direct(
            serverContext: try TestCertificates.serverContext(),
            clientContext: try TestCertificates.trustingClientContext())
        try other.shuttle()
        #expect(try other.tlsHandler(other.client).channelBindingTLSExporter() != client)
    }

    @Test func tls12SessionHasExtendedMasterSecretBinding() throws {
        let capped = try TLSContext(
            client: TLSClientConfiguration(
                trust: .roots([.pem(TestCertificates.server.certificatePEM)]), maximumVersion: .tls12))
        let pair = try EmbeddedPair.direct(
            serverContext: try TestCertificates.serverContext(), clientContext: capped)
        try pair.shuttle()
        #expect(pair.clientRecorder.handshakeInfo?.protocolVersion == "TLSv1.2")
        let client = try pair.tlsHandler(pair.client).channelBindingTLSExporter()
        #expect(client == (try pair.tlsHandler(pair.server).channelBindingTLSExporter()))
    }

    @Test func clientCloseSendsCloseNotifyAndBothSidesClose() throws {
        let pair = try EmbeddedPair.direct(
            serverContext: try TestCertificates.serverContext(),
            clientContext: try TestCertificates.trustingClientContext())
        try pair.shuttle()
        let closed = pair.client.close()
        var closeDone = false
        closed.assumeIsolated().whenComplete { _ in closeDone = true }
        #expect(try pair.tlsHandler(pair.client).state == .closing)
        #expect(!closeDone)  // waiting for the server's close_notify

        try pair.shuttle()
        #expect(closeDone)
        try closed.wait()
        #expect(!pair.client.isActive)
        #expect(!pair.server.isActive)
        // Both sides saw a clean TLS close, not a truncation.
        #expect(pair.clientRecorder.errors.isEmpty)
        #expect(pair.serverRecorder.errors.isEmpty)
    }

    @Test func serverCloseSendsCloseNotifyAndBothSidesClose() throws {
        let pair = try EmbeddedPair.direct(
            serverContext: try TestCertificates.serverContext(),
            clientContext: try TestCertificates.trustingClientContext())
        try pair.shuttle()
        try pair.client.writeAndFlush(ByteBuffer(string: "</stream:stream>")).wait()
        try pair.shuttle()
        let closed = pair.server.close()
        try pair.shuttle()
        try closed.wait()
        #expect(!pair.client.isActive && !pair.server.isActive)
        #expect(pair.serverRecorder.received == "</stream:stream>")
        #expect(pair.clientRecorder.errors.isEmpty && pair.serverRecorder.errors.isEmpty)
    }

    @Test func closeTimesOutWhenPeerNeverAnswers() throws {
        let pair = try EmbeddedPair.direct(
            serverContext: try TestCertificates.serverContext(),
            clientContext: try TestCertificates.trustingClientContext())
        try pair.shuttle()
        let closed = pair.client.close()
        _ = try pair.client.readOutbound(as: ByteBuffer.self)  // close_notify lost on the way
        pair.client.embeddedEventLoop.advanceTime(by: .milliseconds(1999))
        #expect(pair.client.isActive)
        pair.client.embeddedEventLoop.advanceTime(by: .milliseconds(2))
        #expect(!pair.client.isActive)
        try closed.wait()
    }

    @Test func transportClosedWithoutCloseNotifyIsReportedAsTruncation() throws {
        let pair = try EmbeddedPair.direct(
            serverContext: try TestCertificates.serverContext(),
            clientContext: try TestCertificates.trustingClientContext())
        try pair.shuttle()
        pair.client.pipeline.fireChannelInactive()
        #expect(pair.clientRecorder.tlsErrors == [.unexpectedEOF])
        #expect(try pair.tlsHandler(pair.client).state == .closed)
    }

    @Test func garbageFromPeerIsAHandshakeFailure() throws {
        let server = EmbeddedChannel()
        let recorder = Recorder()
        try server.pipeline.syncOperations.addHandler(TLSHandler(context: try TestCertificates.serverContext()))
        try server.pipeline.syncOperations.addHandler(recorder)
        try server.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 5223)).wait()
        try server.writeInbound(ByteBuffer(string: "<?xml version='1.0'?><stream:stream>"))
        guard case .handshakeFailed(let reason)? = recorder.tlsErrors.first else {
            Issue.record("expected handshakeFailed, got \(recorder.errors)")
            return
        }
        #expect(!reason.isEmpty)
        #expect(!server.isActive)
    }
}
