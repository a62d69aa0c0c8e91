import ParleyCore
import Testing

/// XEP-0352 client state indication: an inactive client is not woken for presence updates
/// and chat states; what it must see (a message with a body, an iq, a subscription request)
/// goes out at once, after what waited, so nothing is reordered.
@Suite struct ClientStateScenarios {
    static let csi = "urn:xmpp:csi:0"
    static let chatStates = "http://jabber.org/protocol/chatstates"

    /// Alice on resource r, told the server she is inactive; the round trip after it proves
    /// the server has taken it in (a stanza from her flushes, but nothing is held yet).
    private func inactiveAlice(_ server: TestServer, streamManagement: Bool = false, available: Bool = false) async throws -> TestClient {
        let alice = try await server.login("alice", resource: "r")
        if streamManagement { try await alice.enableStreamManagement(resume: false) }
        if available { try await alice.available() }
        try await alice.send("<inactive xmlns='\(Self.csi)'/>")
        try await alice.sync()
        return alice
    }

    private func presence(_ status: String) -> String {
        "<presence to='alice@localhost/r'><status>\(status)</status></presence>"
    }

    private func chatState(_ state: String, id: String) -> String {
        "<message to='alice@localhost/r' type='chat' id='\(id)'><\(state) xmlns='\(Self.chatStates)'/></message>"
    }

    /// What each element is, in a form a test can compare: `presence:<from>:<status>` and
    /// `message:<id>`.
    private func describe(_ elements: [XMLElement]) -> [String] {
        elements.map { element in
            switch element.name {
            case "presence": "presence:\(element.from ?? ""):\(element.firstChild("status")?.text ?? element.type ?? "")"
            case "message": "message:\(element.id ?? "")"
            default: element.name
            }
        }
    }

    /// Like `expectSilence`, for a stream with XEP-0198 on: the server's `<r/>` for what it
    /// sent before may come at any moment and says nothing about what is held.
    private func expectNoStanza(_ client: TestClient, for duration: Duration) async throws {
        let deadline = ContinuousClock.now + duration
        while ContinuousClock.now < deadline {
            guard let event = await client.events.next(timeout: deadline - .now) else { return }
            if case .element(let element) = event, element.name == "r", element.namespace == TestClient.sm { continue }
            throw ScenarioFailure("expected nothing, got \(event)")
        }
    }

    @Test func theFeatureIsOfferedOnceAuthenticated() async throws {
        try await TestServer.with { server in
            let before = try await server.connect().secureStream()
            #expect(before.firstChild("csi", namespace: Self.csi) == nil)
            let after = try await server.connect().authenticate("alice")
            #expect(after.firstChild("csi", namespace: Self.csi) != nil, "\(after.xmlString())")
        }
    }

    @Test func whatCanWaitIsHeldAndGoesOutBeforeTheNextMessageWithABody() async throws {
        try await TestServer.with { server in
            let alice = try await inactiveAlice(server)
            let bob = try await server.login("bob", resource: "b")
            try await bob.send(presence("one"))
            try await bob.send(chatState("composing", id: "c1"))
            try await bob.send(presence("two"))
            try await bob.sync()
            try await alice.expectSilence(for: .milliseconds(300))

            try await bob.send("<message to='alice@localhost/r' type='chat' id='m1'><body>hi</body></message>")
            let received = try await alice.nextElements(3)
            // Only bob's latest presence; it took the place of the first, after the chat state.
            #expect(describe(received) == ["message:c1", "presence:bob@localhost/b:two", "message:m1"])
            // What waited says when it arrived (as Prosody stamps it); what did not wait does not.
            for held in received.prefix(2) {
                #expect(held.firstChild("delay", namespace: IM.delay)?[attribute: "from"] == "alice@localhost", "\(held.xmlString())")
            }
            #expect(received[2].firstChild("delay", namespace: IM.delay) == nil)
            try await alice.expectSilence(for: .milliseconds(200))
        }
    }

    @Test func importantStanzasAreNotHeld() async throws {
        try await TestServer.with { server in
            // Available, so that a subscription request reaches her.
            let alice = try await inactiveAlice(server, available: true)
            let bob = try await server.login("bob", resource: "b")
            try await bob.send("<iq type='get' id='p1' to='alice@localhost/r'><ping xmlns='urn:xmpp:ping'/></iq>")
            #expect(try await alice.expect("iq").id == "p1")
            try await bob.send("<presence to='alice@localhost' type='subscribe'/>")
            #expect(try await alice.expect("presence").type == "subscribe")
            try await bob.send("<message to='alice@localhost/r' type='error' id='e1'><error type='cancel'><gone xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></message>")
            #expect(try await alice.expect("message").id == "e1")
        }
    }

    @Test func activeFlushesEverythingInOrderKeepingTheLatestPresencePerFullJID() async throws {
        try await TestServer.with { server in
            let alice = try await inactiveAlice(server)
            let one = try await server.login("bob", resource: "one")
            let two = try await server.login("bob", resource: "two")
            try await one.send(presence("one-a"))
            try await one.sync()
            try await two.send(presence("two-a"))
            try await two.sync()
            try await one.send(chatState("composing", id: "c1"))
            try await one.send(presence("one-b"))
            try await one.send(chatState("paused", id: "c2"))
            try await one.sync()
            try await two.send("<presence to='alice@localhost/r' type='unavailable'/>")
            try await two.sync()
            try await alice.expectSilence(for: .milliseconds(300))

            try await alice.send("<active xmlns='\(Self.csi)'/>")
            let flushed = try await alice.nextElements(4)
            #expect(
                describe(flushed) == [
                    "message:c1", "presence:bob@localhost/one:one-b", "message:c2", "presence:bob@localhost/two:unavailable",
                ])
            // Active again: presence goes straight through.
            try await one.send(presence("one-c"))
            #expect(describe([try await alice.nextElement()]) == ["presence:bob@localhost/one:one-c"])
            try await alice.expectSilence(for: .milliseconds(200))
        }
    }

    @Test func theHeldQueueIsBounded() async throws {
        try await TestServer.with({ $0.clientState.queueSize = 3 }) { server in
            let alice = try await inactiveAlice(server)
            let bob = try await server.login("bob", resource: "b")
            for index in 1...3 { try await bob.send(chatState("composing", id: "c\(index)")) }
            try await bob.sync()
            try await alice.expectSilence(for: .milliseconds(300))
            try await bob.send(chatState("paused", id: "c4"))
            #expect(describe(try await alice.nextElements(4)) == ["message:c1", "message:c2", "message:c3", "message:c4"])
        }
    }

    @Test func aSessionEndingWithHeldStanzasLosesNoMessage() async throws {
        try await TestServer.with { server in
            let alice = try await inactiveAlice(server)
            let bob = try await server.login("bob", resource: "b")
            // No body, so it can wait; the hint keeps it in offline storage should it need to go there.
            try await bob.send(
                """
                <message to='alice@localhost/r' type='chat' id='mark'><displayed xmlns='urn:xmpp:chat-markers:0' id='x'/>\
                <store xmlns='urn:xmpp:hints'/></message>
                """)
            try await bob.send(presence("lapses"))
            try await bob.sync()
            try await alice.expectSilence(for: .milliseconds(300))
            try await server.disconnect("alice", alice)

            let again = try await server.im("alice", "again")
            let message = try await again.expectMessage(id: "mark")
            #expect(message.firstChild("displayed", namespace: "urn:xmpp:chat-markers:0") != nil)
            try await again.expectNothingPending("the held presence of a session that ended is not redelivered")
        }
    }

    @Test func heldStanzasAreNotCountedByStreamManagementUntilSent() async throws {
        try await TestServer.with { server in
            // The round trip after <inactive/> is the one stanza sent so far.
            let alice = try await inactiveAlice(server, streamManagement: true)
            let bob = try await server.login("bob", resource: "b")
            try await bob.send(presence("held"))
            try await bob.sync()
            try await alice.send("<a xmlns='urn:xmpp:sm:3' h='2'/>")
            // The server may have asked for an acknowledgement of its one stanza meanwhile.
            let element = try await alice.nextIgnoringAckRequests()
            #expect(element.name == "error" && element.namespace == XMLNamespace.streams, "\(element.xmlString())")
            let error = StreamError(element: element)
            #expect(error.condition == .undefinedCondition)
            #expect(error.text?.contains("only 1 were sent") == true, "\(error)")
        }
    }

    @Test func flushedStanzasAreCountedOnceSent() async throws {
        try await TestServer.with { server in
            let alice = try await inactiveAlice(server, streamManagement: true)
            let bob = try await server.login("bob", resource: "b")
            try await bob.send(presence("held"))
            try await bob.sync()
            try await alice.send("<active xmlns='\(Self.csi)'/>")
            let flushed = try await alice.expectIgnoringAckRequests("presence")
            #expect(flushed.firstChild("status")?.text == "held")
            try await alice.send("<a xmlns='urn:xmpp:sm:3' h='2'/>")
            #expect(try await alice.requestAcknowledgement() != nil)
        }
    }

    @Test func heldStanzasAreResentWhenTheSessionIsResumedAndItStartsActive() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice", resource: "r")
            let id = try #require(try await alice.enableStreamManagement(resume: true)[attribute: "id"])
            try await alice.send("<inactive xmlns='\(Self.csi)'/>")
            try await alice.sync()
            let bob = try await server.login("bob", resource: "b")
            try await bob.send(chatState("composing", id: "c1"))
            try await bob.send(presence("held"))
            try await bob.sync()
            try await expectNoStanza(alice, for: .milliseconds(300))
            await alice.close()
            try await Task.sleep(for: .milliseconds(200))

            let again = try await server.connect()
            try await again.authenticate("alice")
            // The round trip's answer was the one stanza received.
            try await again.send("<resume xmlns='urn:xmpp:sm:3' previd='\(id)' h='1'/>")
            _ = try await again.expect("resumed", namespace: TestClient.sm)
            let resent = [try await again.nextIgnoringAckRequests(), try await again.nextIgnoringAckRequests()]
            #expect(describe(resent) == ["message:c1", "presence:bob@localhost/b:held"])
            // The new connection is active: nothing waits any more.
            try await bob.send(chatState("paused", id: "c2"))
            #expect(describe([try await again.nextIgnoringAckRequests()]) == ["message:c2"])
        }
    }

    @Test func anUnknownClientStateElementIsAStreamError() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            try await alice.send("<sleepy xmlns='\(Self.csi)'/>")
            try await alice.expectStreamError(.unsupportedStanzaType)
        }
    }
}
