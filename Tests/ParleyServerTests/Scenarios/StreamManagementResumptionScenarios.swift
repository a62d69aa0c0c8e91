import ParleyCore
import ParleyServer
import Testing

/// XEP-0198 §5: a resumable session outlives its connection; a new connection resumes it
/// and gets exactly what the client had not received; a session not resumed in time ends and
/// its unacknowledged messages go to offline storage.
@Suite struct StreamManagementResumptionScenarios {
    private static let sm = TestClient.sm

    /// Alice enabled resumption and bob sent her `first`, which she received but did not acknowledge.
    private func resumableAlice(_ server: TestServer, bob: TestClient) async throws -> (TestClient, String) {
        let alice = try await server.login("alice", resource: "phone")
        let enabled = try await alice.enableStreamManagement(resume: true)
        let id = try #require(enabled[attribute: "id"])
        try await bob.send("<message to='alice@localhost/phone' type='chat' id='first'><body>1</body></message>")
        #expect(try await alice.expectIgnoringAckRequests("message").id == "first")
        return (alice, id)
    }

    /// Closes the TCP connection without `</stream:stream>`, and gives the server a moment to notice.
    private func drop(_ client: TestClient) async throws {
        await client.close()
        try await Task.sleep(for: .milliseconds(200))
    }

    @Test func resumingOnANewConnectionDeliversWhatTheClientMissedExactlyOnce() async throws {
        try await TestServer.with { server in
            let bob = try await server.login("bob", resource: "desk")
            let (alice, id) = try await resumableAlice(server, bob: bob)
            try await alice.send("<message to='bob@localhost/desk' type='chat' id='hello'><body>hi</body></message>")
            try await bob.expect("message")
            try await drop(alice)
            // The detached session is still routable: these wait for it.
            for name in ["second", "third"] {
                try await bob.send("<message to='alice@localhost/phone' type='chat' id='\(name)'><body>x</body></message>")
            }
            let sync = try await bob.query("<iq type='get' id='sync'><ping xmlns='urn:xmpp:ping'/></iq>", id: "sync")
            #expect(sync.type == "result")

            let again = try await server.connect()
            try await again.authenticate("alice")
            // The client had received one stanza.
            try await again.send("<resume xmlns='urn:xmpp:sm:3' previd='\(id)' h='1'/>")
            let resumed = try await again.expect("resumed", namespace: Self.sm)
            #expect(resumed[attribute: "previd"] == id)
            #expect(resumed[attribute: "h"] == "1")
            #expect(try await again.nextMessageIDs(2) == ["second", "third"])
            // Same full JID, on the new connection.
            try await bob.send("<message to='alice@localhost/phone' type='chat' id='fourth'><body>x</body></message>")
            #expect(try await again.nextMessageIDs(1) == ["fourth"])
            try await again.send("<a xmlns='urn:xmpp:sm:3' h='4'/>")
            #expect(try await again.requestAcknowledgement() == 1)
            // Nothing was sent twice.
            try await again.expectSilence(for: .milliseconds(300))
            try await again.send("<iq type='get' id='after'><ping xmlns='urn:xmpp:ping'/></iq>")
            #expect(try await again.expectIgnoringAckRequests("iq").id == "after")
        }
    }

    @Test func theClientsHDecidesWhatIsResent() async throws {
        try await TestServer.with { server in
            let bob = try await server.login("bob")
            let (alice, id) = try await resumableAlice(server, bob: bob)
            try await drop(alice)
            try await bob.send("<message to='alice@localhost/phone' type='chat' id='second'><body>x</body></message>")
            _ = try await bob.query("<iq type='get' id='sync'><ping xmlns='urn:xmpp:ping'/></iq>", id: "sync")
            let again = try await server.connect()
            try await again.authenticate("alice")
            // As if `first` had been lost on the way.
            try await again.send("<resume xmlns='urn:xmpp:sm:3' previd='\(id)' h='0'/>")
            try await again.expect("resumed", namespace: Self.sm)
            #expect(try await again.nextMessageIDs(2) == ["first", "second"])
        }
    }

    @Test func resumingWhileTheOldConnectionIsOpenClosesIt() async throws {
        try await TestServer.with { server in
            let bob = try await server.login("bob")
            let (alice, id) = try await resumableAlice(server, bob: bob)
            let again = try await server.connect()
            try await again.authenticate("alice")
            try await again.send("<resume xmlns='urn:xmpp:sm:3' previd='\(id)' h='1'/>")
            try await again.expect("resumed", namespace: Self.sm)
            let error = try await alice.nextIgnoringAckRequests()
            #expect(error.name == "error" && error.firstChild("conflict", namespace: XMLNamespace.streamErrors) != nil)
            try await bob.send("<message to='alice@localhost/phone' type='chat' id='second'><body>x</body></message>")
            #expect(try await again.nextMessageIDs(1) == ["second"])
        }
    }

    @Test func anUnknownPrevidOrAnotherUsersSessionIsNotFound() async throws {
        try await TestServer.with { server in
            let bob = try await server.login("bob")
            let (_, id) = try await resumableAlice(server, bob: bob)
            let stranger = try await server.connect()
            try await stranger.authenticate("bob")
            try await stranger.send("<resume xmlns='urn:xmpp:sm:3' previd='\(id)' h='0'/>")
            let failed = try await stranger.expect("failed", namespace: Self.sm)
            #expect(failed.firstChild("item-not-found", namespace: XMLNamespace.stanzaErrors) != nil)
            #expect(failed[attribute: "h"] == nil)
            try await stranger.send("<resume xmlns='urn:xmpp:sm:3' previd='no-such-session' h='0'/>")
            let unknown = try await stranger.expect("failed", namespace: Self.sm)
            #expect(unknown.firstChild("item-not-found", namespace: XMLNamespace.stanzaErrors) != nil)
            // After a failed resumption, binding still works.
            #expect(try await stranger.bind(resource: "fresh").type == "result")
        }
    }

    @Test func aSessionNotResumedInTimeSendsItsUnacknowledgedMessagesOffline() async throws {
        try await TestServer.with({ $0.streamManagement.resumeTimeout = .seconds(1) }) { server in
            let bob = try await server.login("bob")
            let (alice, id) = try await resumableAlice(server, bob: bob)
            try await alice.send("<iq type='get' id='p'><ping xmlns='urn:xmpp:ping'/></iq>")
            try await alice.expectIgnoringAckRequests("iq")
            try await drop(alice)
            try await bob.send("<message to='alice@localhost/phone' type='chat' id='second'><body>2</body></message>")
            try await bob.send("<message to='alice@localhost/phone' type='chat' id='third'><body>3</body></message>")
            _ = try await bob.query("<iq type='get' id='sync'><ping xmlns='urn:xmpp:ping'/></iq>", id: "sync")
            try await Task.sleep(for: .milliseconds(1800))

            let again = try await server.connect()
            try await again.authenticate("alice")
            try await again.send("<resume xmlns='urn:xmpp:sm:3' previd='\(id)' h='1'/>")
            let failed = try await again.expect("failed", namespace: Self.sm)
            #expect(failed.firstChild("item-not-found", namespace: XMLNamespace.stanzaErrors) != nil)
            // The server had handled alice's one ping.
            #expect(failed[attribute: "h"] == "1")
            #expect(try await again.bind(resource: "laptop").type == "result")
            try await again.send("<presence/>")
            // Everything never acknowledged, in order, from offline storage.
            let ids = try await again.nextMessageIDs(3)
            #expect(ids == ["first", "second", "third"])
        }
    }

    @Test func aCleanCloseEndsTheSessionAndItCannotBeResumed() async throws {
        try await TestServer.with { server in
            let bob = try await server.login("bob")
            let (alice, id) = try await resumableAlice(server, bob: bob)
            try await alice.send("</stream:stream>")
            while case .element = try await alice.next() {}
            let again = try await server.connect()
            try await again.authenticate("alice")
            try await again.send("<resume xmlns='urn:xmpp:sm:3' previd='\(id)' h='0'/>")
            let failed = try await again.expect("failed", namespace: Self.sm)
            #expect(failed.firstChild("item-not-found", namespace: XMLNamespace.stanzaErrors) != nil)
            #expect(failed[attribute: "h"] == "0")
            // `first` was never acknowledged: it waits offline.
            #expect(try await again.bind(resource: "laptop").type == "result")
            try await again.send("<presence/>")
            #expect(try await again.nextMessageIDs(1) == ["first"])
        }
    }
}
