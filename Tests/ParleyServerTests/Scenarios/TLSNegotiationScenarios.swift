import ParleyCore
import Testing

/// RFC 6120 §5 and XEP-0368: what is on offer before and after TLS, on both ports.
@Suite struct TLSNegotiationScenarios {
    private func mechanisms(in features: XMLElement) -> [String] {
        features.firstChild("mechanisms", namespace: XMLNamespace.sasl).map(SASLMechanism.offered(in:)) ?? []
    }

    @Test func beforeTLSOnlyARequiredStartTLSIsOffered() async throws {
        try await TestServer.with { server in
            let client = try await server.connect()
            let features = try await client.openStream()
            let starttls = try #require(features.firstChild("starttls", namespace: XMLNamespace.tls))
            #expect(starttls.firstChild("required", namespace: XMLNamespace.tls) != nil)
            #expect(features.firstChild("mechanisms", namespace: XMLNamespace.sasl) == nil)
            #expect(features.elements.count == 1)
        }
    }

    @Test func authBeforeTLSIsRefusedWithEncryptionRequired() async throws {
        try await TestServer.with { server in
            let client = try await server.connect()
            try await client.openStream()
            let outcome = try await client.authenticatePLAIN(username: "alice", password: "alice-password")
            #expect(outcome.failureCondition == .encryptionRequired)
            // The stream is still usable: STARTTLS works after the refusal.
            let features = try await client.startTLS()
            #expect(features.firstChild("mechanisms", namespace: XMLNamespace.sasl) != nil)
        }
    }

    @Test func aStanzaBeforeAuthenticationIsNotAuthorized() async throws {
        try await TestServer.with { server in
            let client = try await server.connect()
            try await client.secureStream()
            try await client.send("<message to='bob@localhost'><body>hi</body></message>")
            let error = try await client.expectStreamError(.notAuthorized)
            #expect(error.text?.isEmpty == false)
        }
    }

    @Test func afterTLSAllMechanismsAreOfferedAndNoRegistrationByDefault() async throws {
        try await TestServer.with { server in
            let client = try await server.connect()
            let features = try await client.secureStream()
            #expect(mechanisms(in: features) == ["SCRAM-SHA-256", "SCRAM-SHA-1", "PLAIN"])
            #expect(features.firstChild("starttls", namespace: XMLNamespace.tls) == nil)
            #expect(features.firstChild("register", namespace: "http://jabber.org/features/iq-register") == nil)
            #expect(client.handshake?.negotiatedALPN == nil)
        }
    }

    @Test func registrationIsAdvertisedOnlyWhenEnabled() async throws {
        try await TestServer.with({ $0.registration.enabled = true }) { server in
            let client = try await server.connect()
            let plain = try await client.openStream()
            #expect(plain.firstChild("register", namespace: "http://jabber.org/features/iq-register") == nil)
            let secure = try await client.startTLS()
            #expect(secure.firstChild("register", namespace: "http://jabber.org/features/iq-register") != nil)
        }
    }

    @Test func withTLSOptionalPlainIsNotOfferedInTheClear() async throws {
        try await TestServer.with({
            $0.tls.required = false
            $0.auth.allowPlainWithoutTLS = false
        }) { server in
            let client = try await server.connect()
            let features = try await client.openStream()
            let starttls = try #require(features.firstChild("starttls", namespace: XMLNamespace.tls))
            #expect(starttls.firstChild("required", namespace: XMLNamespace.tls) == nil)
            #expect(mechanisms(in: features) == ["SCRAM-SHA-256", "SCRAM-SHA-1"])
            let outcome = try await client.authenticatePLAIN(username: "alice", password: "alice-password")
            #expect(outcome.failureCondition == .encryptionRequired)
            // SCRAM works in the clear when TLS is optional.
            #expect(try await client.authenticateSCRAM(username: "alice", password: "alice-password") == .success)
        }
    }

    @Test func directTLSOffersMechanismsAtOnceAndAcceptsTheXMPPClientALPN() async throws {
        try await TestServer.with { server in
            let client = try await server.connectDirectTLS()
            #expect(client.handshake?.negotiatedALPN == "xmpp-client")
            #expect(client.handshake?.peerCertificateFingerprint != nil)
            let features = try await client.openStream()
            #expect(features.firstChild("starttls", namespace: XMLNamespace.tls) == nil)
            #expect(mechanisms(in: features) == ["SCRAM-SHA-256", "SCRAM-SHA-1", "PLAIN"])
            #expect(try await client.authenticatePLAIN(username: "alice", password: "alice-password") == .success)
            let bound = try await client.openStream()
            #expect(bound.firstChild("bind", namespace: XMLNamespace.bind) != nil)
        }
    }

    @Test func directTLSWithoutALPNStillConnects() async throws {
        try await TestServer.with { server in
            let client = try await server.connectDirectTLS(alpn: [])
            #expect(client.handshake?.negotiatedALPN == nil)
            let features = try await client.openStream()
            #expect(!mechanisms(in: features).isEmpty)
        }
    }

    @Test func startTLSTwiceIsRefused() async throws {
        try await TestServer.with { server in
            let client = try await server.connect()
            try await client.secureStream()
            try await client.send("<starttls xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>")
            try await client.expect("failure", namespace: XMLNamespace.tls)
            try await client.expectStreamError(.policyViolation)
        }
    }
}
