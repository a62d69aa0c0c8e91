import NIOCore
import NIOEmbedded
import ParleyTLS
import Testing

@Suite struct CertificateVerificationTests {
    private func handshake(clientTrust: TLSTrust, serverName: String? = TestCertificates.domain) throws -> EmbeddedPair {
        let pair = try EmbeddedPair.direct(
            serverContext: try TestCertificates.serverContext(),
            clientContext: try TLSContext(client: TLSClientConfiguration(trust: clientTrust)),
            serverName: serverName)
        try pair.shuttle()
        return pair
    }

    @Test func selfSignedCertificateIsUntrustedBySystemStore() throws {
        let pair = try handshake(clientTrust: .systemDefault)
        guard case .certificateUntrusted(let reason, let fingerprint)? = pair.clientRecorder.tlsErrors.first else {
            Issue.record("expected certificateUntrusted, got \(pair.clientRecorder.errors)")
            return
        }
        #expect(reason.contains("self-signed") || reason.contains("self signed"))
        #expect(fingerprint == TestCertificates.server.fingerprint)
        #expect(!pair.client.isActive)
        // The alert reached the server, which fails its side too.
        #expect(!pair.server.isActive)
        #expect(pair.serverRecorder.tlsErrors.count == 1)
        #expect(pair.clientRecorder.handshakeInfo == nil)
    }

    @Test func hostnameMismatchIsRefused() throws {
        let pair = try handshake(
            clientTrust: .roots([.pem(TestCertificates.server.certificatePEM)]), serverName: "evil.test")
        #expect(
            pair.clientRecorder.tlsErrors
                == [.hostnameMismatch(expected: "evil.test", fingerprint: TestCertificates.server.fingerprint)])
        #expect(!pair.client.isActive)
    }

    @Test func trustedRootWithMatchingNamesIsAccepted() throws {
        for name in [TestCertificates.domain, "conference.example.test"] {
            let pair = try handshake(clientTrust: .roots([.pem(TestCertificates.server.certificatePEM)]), serverName: name)
            #expect(pair.clientRecorder.errors.isEmpty, "\(name)")
            #expect(pair.clientRecorder.handshakeInfo != nil, "\(name)")
        }
        // The wildcard covers one label only.
        let deep = try handshake(
            clientTrust: .roots([.pem(TestCertificates.server.certificatePEM)]), serverName: "a.b.example.test")
        #expect(deep.clientRecorder.handshakeInfo == nil)
    }

    @Test func ipAddressNotInCertificateIsRefused() throws {
        let pair = try handshake(
            clientTrust: .roots([.pem(TestCertificates.server.certificatePEM)]), serverName: "127.0.0.1")
        #expect(
            pair.clientRecorder.tlsErrors
                == [.hostnameMismatch(expected: "127.0.0.1", fingerprint: TestCertificates.server.fingerprint)])
    }

    @Test func pinnedFingerprintIsAcceptedWhateverTheName() throws {
        for fingerprint in [
            TestCertificates.server.fingerprint,
            TestCertificates.server.fingerprint.lowercased().replacingOccurrences(of: ":", with: ""),
        ] {
            let pair = try handshake(clientTrust: .pinned(.sha256Fingerprint(fingerprint)), serverName: "localhost")
            #expect(pair.clientRecorder.errors.isEmpty)
            #expect(pair.clientRecorder.handshakeInfo?.peerCertificateFingerprint == TestCertificates.server.fingerprint)
        }
    }

    @Test func pinnedCertificatePEMIsAccepted() throws {
        let pair = try handshake(clientTrust: .pinned(.certificate(.pem(TestCertificates.server.certificatePEM))))
        #expect(pair.clientRecorder.errors.isEmpty)
        try pair.client.writeAndFlush(ByteBuffer(string: "ping")).wait()
        try pair.shuttle()
        #expect(pair.serverRecorder.received == "ping")
    }

    @Test func wrongPinnedCertificateIsRefused() throws {
        let pair = try handshake(clientTrust: .pinned(.certificate(.pem(TestCertificates.other.certificatePEM))))
        #expect(
            pair.clientRecorder.tlsErrors == [
                .pinnedCertificateMismatch(
                    expected: TestCertificates.other.fingerprint, actual: TestCertificates.server.fingerprint)
            ])
        #expect(!pair.client.isActive)
    }

    @Test func pendingWritesFailWhenVerificationFails() throws {
        let pair = try EmbeddedPair.direct(
            serverContext: try TestCertificates.serverContext(),
            clientContext: try TLSContext(client: TLSClientConfiguration(trust: .systemDefault)))
        let write = pair.client.writeAndFlush(ByteBuffer(string: "<auth/>"))
        try pair.shuttle()
        #expect(throws: TLSError.self) { try write.wait() }
        #expect(pair.serverRecorder.received.isEmpty)
    }

    @Test func malformedPinIsAConfigurationError() {
        #expect(throws: TLSError.self) {
            try TLSContext(client: TLSClientConfiguration(trust: .pinned(.sha256Fingerprint("AB:CD"))))
        }
    }
}
