import ParleyCore
import Testing

/// RFC 6120 §8 and §10, RFC 6121 §8: addressing, stamping and the errors the router returns.
@Suite struct RoutingScenarios {
    /// Logs in and sends initial presence, which the server reflects to the sender.
    private func available(_ server: TestServer, _ username: String, resource: String) async throws -> TestClient {
        let client = try await server.login(username, resource: resource)
        try await client.send("<presence/>")
        let reflected = try await client.expect("presence")
        #expect(reflected.from == "\(username)@localhost/\(resource)")
        return client
    }

    @Test func theServerStampsTheSendersFullJIDOverASpoofedFrom() async throws {
        try await TestServer.with { server in
            let bob = try await available(server, "bob", resource: "home")
            let alice = try await server.login("alice", resource: "work")
            try await alice.send("<message from='mallory@localhost/evil' to='bob@localhost' type='chat' id='m1'><body>hi</body></message>")
            let message = try await bob.expect("message")
            #expect(message.from == "alice@localhost/work")
            #expect(message.to == "bob@localhost")
            #expect(message.firstChild("body")?.text == "hi")
        }
    }

    @Test func aMessageToAnotherDomainIsRemoteServerNotFound() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice", resource: "work")
            try await alice.send("<message to='someone@example.org' id='m1'><body>hi</body></message>")
            let error = try await alice.expect("message")
            #expect(error.type == "error" && error.id == "m1")
            #expect(error.from == "someone@example.org")
            #expect(error.stanzaErrorCondition == .remoteServerNotFound)
        }
    }

    @Test func aMalformedToIsJIDMalformed() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            try await alice.send("<message to='bob@@localhost' id='bad-to'><body>hi</body></message>")
            let error = try await alice.expect("message")
            #expect(error.id == "bad-to" && error.stanzaErrorCondition == .jidMalformed)
        }
    }

    @Test func anIQToTheServerInAnUnknownNamespaceIsServiceUnavailable() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            let reply = try await alice.query("<iq type='get' id='q1' to='localhost'><query xmlns='urn:example:nothing'/></iq>", id: "q1")
            #expect(reply.type == "error" && reply.stanzaErrorCondition == .serviceUnavailable)
            #expect(reply.from == "localhost")
        }
    }

    @Test func anIQGetWithTwoChildrenIsBadRequest() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            let reply = try await alice.query(
                "<iq type='get' id='q2' to='localhost'><ping xmlns='urn:xmpp:ping'/><ping xmlns='urn:xmpp:ping'/></iq>", id: "q2")
            #expect(reply.type == "error" && reply.stanzaErrorCondition == .badRequest)
        }
    }

    @Test func anIQWithoutAnIDIsBadRequest() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            try await alice.send("<iq type='get' to='localhost'><ping xmlns='urn:xmpp:ping'/></iq>")
            let reply = try await alice.expect("iq")
            #expect(reply.type == "error" && reply.stanzaErrorCondition == .badRequest)
        }
    }

    @Test func aMessageToAnOfflineResourceGoesToTheAvailableOne() async throws {
        try await TestServer.with { server in
            let bob = try await available(server, "bob", resource: "home")
            let alice = try await server.login("alice", resource: "work")
            try await alice.send("<message to='bob@localhost/gone' type='chat' id='m2'><body>still there?</body></message>")
            let message = try await bob.expect("message")
            #expect(message.id == "m2" && message.to == "bob@localhost/gone")
            try await alice.expectSilence(for: .milliseconds(200))
        }
    }

    @Test func aMessageForAnAccountWithNobodyAvailableIsStoredAndOneForNoAccountBounces() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice", resource: "work")
            // Bob is bound but not available (no presence sent): not a delivery target, so
            // the message waits in offline storage (RFC 6121 §8.5.2.2.1, XEP-0160).
            let bob = try await server.login("bob", resource: "quiet")
            try await alice.send("<message to='bob@localhost' type='chat' id='m3'><body>hello?</body></message>")
            try await bob.expectSilence(for: .milliseconds(100))
            // An account that does not exist: service-unavailable, nothing stored.
            try await alice.send("<message to='nobody@localhost' type='chat' id='m4'><body>hello?</body></message>")
            let error = try await alice.expect("message")
            #expect(error.id == "m4" && error.type == "error")
            #expect(error.stanzaErrorCondition == .serviceUnavailable)
            // Once available, bob gets the stored message, stamped with its delay.
            try await bob.send("<presence/>")
            var stored: XMLElement? = nil
            for _ in 0..<3 {
                let next = try await bob.nextElement(timeout: .seconds(5))
                if next.name == "message" {
                    stored = next
                    break
                }
            }
            #expect(stored?.id == "m3" && stored?.firstChild("body")?.text == "hello?")
            #expect(stored?.firstChild("delay", namespace: "urn:xmpp:delay")?[attribute: "from"] == "localhost")
        }
    }

    @Test func errorStanzasAreNeverAnsweredWithErrors() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice", resource: "work")
            let undeliverable = [
                "<message type='error' to='someone@example.org' id='e1'><error type='cancel'><item-not-found xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></message>",
                "<message type='error' to='nobody@localhost' id='e2'><error type='cancel'><item-not-found xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></message>",
                "<iq type='error' to='localhost' id='e3'><error type='cancel'><item-not-found xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></iq>",
                "<iq type='error' to='bob@localhost/none' id='e4'><error type='cancel'><item-not-found xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></iq>",
                "<presence type='error' to='someone@example.org' id='e5'><error type='cancel'><item-not-found xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></presence>",
            ]
            for stanza in undeliverable { try await alice.send(stanza) }
            try await alice.expectSilence(for: .milliseconds(300))
            // Still connected and served.
            let pong = try await alice.query("<iq type='get' id='p1' to='localhost'><ping xmlns='urn:xmpp:ping'/></iq>", id: "p1")
            #expect(pong.type == "result")
        }
    }

    @Test func anIQToAnotherUsersFullJIDIsDeliveredAndItsResultRoutedBack() async throws {
        try await TestServer.with { server in
            let bob = try await server.login("bob", resource: "home")
            let alice = try await server.login("alice", resource: "work")
            try await alice.send("<iq type='get' id='v1' to='bob@localhost/home'><query xmlns='jabber:iq:version'/></iq>")
            let request = try await bob.expect("iq")
            #expect(request.from == "alice@localhost/work" && request.id == "v1")
            try await bob.send("<iq type='result' id='v1' to='alice@localhost/work'><query xmlns='jabber:iq:version'><name>bob-client</name><version>1.0</version></query></iq>")
            let result = try await alice.expect("iq")
            #expect(result.type == "result" && result.from == "bob@localhost/home" && result.id == "v1")
        }
    }
}
