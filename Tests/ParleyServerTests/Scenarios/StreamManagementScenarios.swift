import ParleyCore
import ParleyServer
import Testing

/// XEP-0198 without resumption: the feature, `<enable/>`, counting with `<r/>` and `<a/>`,
/// and offline messages deleted only once acknowledged.
@Suite struct StreamManagementScenarios {
    private static let sm = TestClient.sm

    @Test func theFeatureIsOfferedAfterAuthenticationOnly() async throws {
        try await TestServer.with { server in
            let first = try await server.connect()
            let before = try await first.secureStream()
            #expect(before.firstChild("sm", namespace: Self.sm) == nil)
            let client = try await server.connect()
            let after = try await client.authenticate("alice")
            #expect(after.firstChild("sm", namespace: Self.sm) != nil)
        }
    }

    @Test func enableBeforeBindFailsWithUnexpectedRequest() async throws {
        try await TestServer.with { server in
            let client = try await server.connect()
            try await client.authenticate("alice")
            try await client.send("<enable xmlns='urn:xmpp:sm:3'/>")
            let failed = try await client.expect("failed", namespace: Self.sm)
            #expect(failed.firstChild("unexpected-request", namespace: XMLNamespace.stanzaErrors) != nil)
            // Binding still works afterwards.
            let reply = try await client.bind(resource: "late")
            #expect(reply.type == "result")
        }
    }

    @Test func enableWithoutResumeAndTwice() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            let enabled = try await alice.enableStreamManagement(resume: false)
            #expect(enabled[attribute: "id"] == nil && enabled[attribute: "resume"] == nil)
            try await alice.send("<enable xmlns='urn:xmpp:sm:3'/>")
            let failed = try await alice.expect("failed", namespace: Self.sm)
            #expect(failed.firstChild("unexpected-request", namespace: XMLNamespace.stanzaErrors) != nil)
        }
    }

    @Test func enableWithResume() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            let enabled = try await alice.enableStreamManagement(resume: true)
            #expect(enabled[attribute: "id"]?.isEmpty == false)
            #expect(enabled[attribute: "resume"] == "true")
            #expect(enabled[attribute: "max"] == "300")
        }
    }

    @Test func inboundStanzasAreCounted() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            try await alice.enableStreamManagement(resume: false)
            #expect(try await alice.requestAcknowledgement() == 0)
            for index in 1...3 {
                try await alice.send("<iq type='get' id='p\(index)'><ping xmlns='urn:xmpp:ping'/></iq>")
                // The server asks for an acknowledgement of its pongs after a second; on a
                // loaded machine that <r/> can come first.
                let pong = try await alice.expectIgnoringAckRequests("iq")
                #expect(pong.id == "p\(index)")
            }
            try await alice.send("<message to='bob@localhost' type='headline'><body>x</body></message>")
            #expect(try await alice.requestAcknowledgement() == 4)
        }
    }

    @Test func theServerRequestsAcknowledgementsAndAcceptsThem() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice", resource: "phone")
            let bob = try await server.login("bob")
            try await alice.enableStreamManagement(resume: false)
            for index in 1...5 {
                try await bob.send("<message to='alice@localhost/phone' id='m\(index)'><body>\(index)</body></message>")
            }
            for index in 1...5 {
                let message = try await alice.expect("message")
                #expect(message.id == "m\(index)")
            }
            // Five unacknowledged stanzas make the server ask.
            try await alice.expect("r", namespace: Self.sm)
            try await alice.send("<a xmlns='urn:xmpp:sm:3' h='5'/>")
            try await bob.send("<message to='alice@localhost/phone' id='m6'><body>6</body></message>")
            #expect(try await alice.expect("message").id == "m6")
            // Fewer than five: the server asks within a second anyway.
            try await alice.expect("r", namespace: Self.sm, timeout: .seconds(3))
            try await alice.send("<a xmlns='urn:xmpp:sm:3' h='6'/>")
            #expect(try await alice.requestAcknowledgement() == 0)
        }
    }

    @Test func acknowledgingMoreThanWasSentIsAStreamError() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice", resource: "phone")
            let bob = try await server.login("bob")
            try await alice.enableStreamManagement(resume: false)
            try await bob.send("<message to='alice@localhost/phone' id='m1'><body>1</body></message>")
            try await alice.expect("message")
            try await alice.send("<a xmlns='urn:xmpp:sm:3' h='2'/>")
            let event = try await alice.nextIgnoringAckRequests()
            #expect(event.name == "error" && event.namespace == XMLNamespace.streams)
            #expect(event.firstChild("undefined-condition", namespace: XMLNamespace.streamErrors) != nil)
            let tooHigh = event.firstChild("handled-count-too-high", namespace: Self.sm)
            #expect(tooHigh?[attribute: "h"] == "2" && tooHigh?[attribute: "send-count"] == "1")
            try await alice.expectStreamEnd()
        }
    }

    @Test func withoutStreamManagementNothingChanges() async throws {
        try await TestServer.with({ $0.streamManagement.enabled = false }) { server in
            let client = try await server.connect()
            let features = try await client.authenticate("alice")
            #expect(features.firstChild("sm", namespace: Self.sm) == nil)
            _ = try await client.bind(resource: "plain")
            try await client.send("<enable xmlns='urn:xmpp:sm:3'/>")
            try await client.expectStreamError(.unsupportedStanzaType)
        }
    }

    /// An offline message is deleted when the client acknowledges it, not when it is written.
    @Test func offlineMessagesAreDeletedOnlyWhenAcknowledged() async throws {
        try await TestServer.with { server in
            let bob = try await server.login("bob")
            for index in 1...2 {
                try await bob.send("<message to='alice@localhost' type='chat' id='o\(index)'><body>\(index)</body></message>")
            }
            // Stored once bob's next stanza is answered (the session waits for the store).
            _ = try await bob.query("<iq type='get' id='sync'><ping xmlns='urn:xmpp:ping'/></iq>", id: "sync")

            let alice = try await server.login("alice", resource: "first")
            try await alice.enableStreamManagement(resume: false)
            try await alice.send("<presence/>")
            var received: [String] = []
            while received.count < 2 {
                let element = try await alice.nextIgnoringAckRequests()
                if element.name == "message", let id = element.id { received.append(id) }
            }
            #expect(received == ["o1", "o2"])
            // Written, not acknowledged: still stored. A clean close ends the session.
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await server.running.storage.offlineMessages(for: "alice", limit: 10).count == 2)
            try await alice.send("</stream:stream>")
            while case .element = try await alice.next() {}

            // The next session gets them again; acknowledging them deletes them.
            let again = try await server.login("alice", resource: "second")
            try await again.enableStreamManagement(resume: false)
            try await again.send("<presence/>")
            var h: UInt32 = 0
            var ids: [String] = []
            while ids.count < 2 {
                let element = try await again.nextIgnoringAckRequests()
                guard ["message", "presence", "iq"].contains(element.name) else { continue }
                h += 1
                if element.name == "message", let id = element.id { ids.append(id) }
            }
            #expect(ids == ["o1", "o2"])
            try await again.send("<a xmlns='urn:xmpp:sm:3' h='\(h)'/>")
            let deadline = ContinuousClock.now + .seconds(5)
            while try await server.running.storage.offlineMessages(for: "alice", limit: 10).count > 0, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(try await server.running.storage.offlineMessages(for: "alice", limit: 10).isEmpty)
        }
    }
}
