import ParleyCore
import Testing

/// RFC 6120 §7 resource binding, and the policies for several logins of one account.
@Suite struct BindingScenarios {
    /// A client authenticated as `username`, its stream restarted, ready to bind.
    private func authenticated(_ server: TestServer, _ username: String = "alice") async throws -> TestClient {
        let client = try await server.connect()
        try await client.secureStream()
        let outcome = try await client.authenticateSCRAM(username: username, password: TestServer.defaultAccounts[username] ?? "")
        guard outcome == .success else { throw ScenarioFailure("authentication failed: \(outcome)") }
        let features = try await client.openStream()
        #expect(features.firstChild("bind", namespace: XMLNamespace.bind) != nil)
        return client
    }

    private func boundJID(_ reply: XMLElement) -> String? {
        reply.firstChild("bind", namespace: XMLNamespace.bind)?.firstChild("jid")?.text
    }

    @Test func theClientChosenResourceIsBound() async throws {
        try await TestServer.with { server in
            let client = try await authenticated(server)
            let reply = try await client.bind(resource: "laptop")
            #expect(reply.type == "result")
            #expect(boundJID(reply) == "alice@localhost/laptop")
        }
    }

    @Test func noResourceGetsAGeneratedOne() async throws {
        try await TestServer.with { server in
            let first = try await authenticated(server)
            let a = boundJID(try await first.bind(resource: nil))
            let second = try await authenticated(server)
            let b = boundJID(try await second.bind(resource: ""))
            #expect(a?.hasPrefix("alice@localhost/") == true && b?.hasPrefix("alice@localhost/") == true)
            #expect(a != b && a != "alice@localhost/")
        }
    }

    @Test func anInvalidResourceIsBadRequest() async throws {
        try await TestServer.with { server in
            let client = try await authenticated(server)
            // DEL (U+007F) is a control character: legal in XML 1.0, but not in a resourcepart.
            let reply = try await client.bind(resource: "bad\u{7F}resource")
            #expect(reply.type == "error")
            #expect(reply.stanzaErrorCondition == .badRequest)
            // The stream survives and a valid bind still works.
            #expect(boundJID(try await client.bind(resource: "good", id: "bind-2")) == "alice@localhost/good")
        }
    }

    @Test func theLegacySessionRequestIsAnsweredWithAResult() async throws {
        try await TestServer.with { server in
            let client = try await server.connect()
            try await client.secureStream()
            #expect(try await client.authenticateSCRAM(username: "alice", password: "alice-password") == .success)
            let bindFeatures = try await client.openStream()
            let session = try #require(bindFeatures.firstChild("session", namespace: XMLNamespace.session))
            #expect(session.firstChild("optional", namespace: XMLNamespace.session) != nil)
            _ = try await client.bind(resource: "r")
            let reply = try await client.query(
                "<iq type='set' id='sess-1'><session xmlns='urn:ietf:params:xml:ns:xmpp-session'/></iq>", id: "sess-1")
            #expect(reply.type == "result")
            #expect(reply.elements.isEmpty)
        }
    }

    @Test func aStanzaBeforeBindIsNotAuthorized() async throws {
        try await TestServer.with { server in
            let client = try await authenticated(server)
            try await client.send("<message to='bob@localhost'><body>too early</body></message>")
            try await client.expectStreamError(.notAuthorized)
        }
    }

    @Test func theSameResourceReplacesTheOldSession() async throws {
        try await TestServer.with { server in
            let old = try await server.login("alice", resource: "phone")
            let new = try await authenticated(server)
            let reply = try await new.bind(resource: "phone")
            #expect(boundJID(reply) == "alice@localhost/phone")
            let error = try await old.expectStreamError(.conflict)
            #expect(error.text?.lowercased().contains("replaced") == true)
            // The new session is the one that is routed to.
            let bob = try await server.login("bob")
            try await new.send("<presence/>")
            _ = try await new.expect("presence")
            try await bob.send("<message to='alice@localhost/phone' id='m1'><body>hi</body></message>")
            let message = try await new.expect("message")
            #expect(message.id == "m1")
        }
    }

    @Test func withRejectTheSecondBindOfAResourceIsAConflict() async throws {
        try await TestServer.with({ $0.sessions.onSameResource = .reject }) { server in
            let old = try await server.login("alice", resource: "phone")
            let new = try await authenticated(server)
            let reply = try await new.bind(resource: "phone")
            #expect(reply.type == "error" && reply.stanzaErrorCondition == .conflict)
            // The old session is untouched.
            let pong = try await old.query("<iq type='get' id='p1'><ping xmlns='urn:xmpp:ping'/></iq>", id: "p1")
            #expect(pong.type == "result")
        }
    }

    @Test func singleDeviceEndsTheOtherSessionsOfTheAccount() async throws {
        try await TestServer.with({ $0.sessions.singleDevice = true }) { server in
            let first = try await server.login("alice", resource: "phone")
            let second = try await authenticated(server)
            #expect(boundJID(try await second.bind(resource: "laptop")) == "alice@localhost/laptop")
            let error = try await first.expectStreamError(.conflict)
            #expect(error.text?.contains("another device") == true)
        }
    }

    @Test func maxPerAccountRefusesTheSecondBindWithResourceConstraint() async throws {
        try await TestServer.with({ $0.sessions.maxPerAccount = 1 }) { server in
            let first = try await server.login("alice", resource: "phone")
            let second = try await authenticated(server)
            let reply = try await second.bind(resource: "laptop")
            #expect(reply.type == "error" && reply.stanzaErrorCondition == .resourceConstraint)
            // Replacing the same resource is still allowed: it does not add a session.
            let third = try await authenticated(server)
            #expect(boundJID(try await third.bind(resource: "phone")) == "alice@localhost/phone")
            try await first.expectStreamError(.conflict)
        }
    }
}
