import ParleyCore
import ParleyServer
import Testing

/// A room's messages on their way out: the copies go to each session's encoder straight (not
/// through the pipeline) and are handed to the router with the addresses the room made, and
/// still count for XEP-0198 like any other stanza: one delivered but not acknowledged before
/// the connection drops is sent again, once, when the session resumes.
@Suite struct MUCDeliveryScenarios {
    private static let room = "deliveries@\(MUC.service)"

    /// The next message, skipping the server's acknowledgement requests; its body.
    private func body(_ client: TestClient) async throws -> String? {
        try await client.expectIgnoringAckRequests("message").firstChild("body")?.text
    }

    @Test func aRoomMessageDeliveredToASessionThatThenResumesArrivesOnce() async throws {
        try await MUC.with { server in
            let alice = try await server.login("alice", resource: "phone")
            try await MUC.createInstantRoom(alice, "deliveries", nick: "Alice")
            let enabled = try await alice.enableStreamManagement(resume: true)
            let previd = try #require(enabled[attribute: "id"])
            let bob = try await server.login("bob", resource: "desk")
            _ = try await bob.enter("deliveries", nick: "Bob")
            // 1: Bob's entry; 2: his first message, received but not acknowledged.
            let entry = try await alice.expectIgnoringAckRequests("presence")
            #expect(entry.from == "\(Self.room)/Bob")
            try await bob.send("<message to='\(Self.room)' type='groupchat' id='m1'><body>one</body></message>")
            #expect(try await body(alice) == "one")
            #expect(try await body(bob) == "one")

            await alice.close()
            try await Task.sleep(for: .milliseconds(200))
            // The detached session is still in the room: this waits for it.
            try await bob.send("<message to='\(Self.room)' type='groupchat' id='m2'><body>two</body></message>")
            #expect(try await body(bob) == "two")

            let again = try await server.connect()
            try await again.authenticate("alice")
            // The client got Bob's entry only: the message after it is sent again, then the
            // one that waited, each once, from the occupant JID with the room's stanza-id.
            try await again.send("<resume xmlns='urn:xmpp:sm:3' previd='\(previd)' h='1'/>")
            try await again.expect("resumed", namespace: TestClient.sm)
            let resent = try await again.expectIgnoringAckRequests("message")
            #expect(resent.firstChild("body")?.text == "one" && resent.from == "\(Self.room)/Bob" && resent.to == "alice@localhost/phone")
            #expect(resent.firstChild("stanza-id", namespace: "urn:xmpp:sid:0")?[attribute: "by"] == Self.room)
            #expect(try await body(again) == "two")
            try await bob.send("<message to='\(Self.room)' type='groupchat' id='m3'><body>three</body></message>")
            #expect(try await body(again) == "three")
            #expect(try await body(bob) == "three")
            // Nothing came twice (and the client has sent no stanza since it enabled).
            try await again.send("<a xmlns='urn:xmpp:sm:3' h='4'/>")
            #expect(try await again.requestAcknowledgement() == 0)
            try await again.expectSilence(for: .milliseconds(300))
        }
    }

    /// Many rooms' messages to many sessions in one go keep each session's order, and each
    /// copy goes to its own session: the addresses the room handed on match the copies.
    @Test func interleavedRoomsKeepEachRecipientsOrder() async throws {
        try await MUC.with { server in
            let alice = try await server.login("alice", resource: "a")
            let bob = try await server.login("bob", resource: "b")
            let carol = try await server.login("carol", resource: "c")
            for room in ["first", "second"] {
                try await MUC.createInstantRoom(alice, room, nick: "Alice")
                _ = try await bob.enter(room, nick: "Bob")
                try await alice.expectRoomPresence(room, "Bob")
            }
            _ = try await carol.enter("second", nick: "Carol")
            try await alice.expectRoomPresence("second", "Carol")
            try await bob.expectRoomPresence("second", "Carol")
            // Alice's messages alternate between the rooms; no one reads until all are sent.
            var sent: [(room: String, body: String)] = []
            for index in 0..<20 {
                let room = index.isMultiple(of: 2) ? "first" : "second"
                sent.append((room, "m\(index)"))
                try await alice.send("<message to='\(room)@\(MUC.service)' type='groupchat'><body>m\(index)</body></message>")
            }
            let readers = [(alice, "alice@localhost/a", ["first", "second"]), (bob, "bob@localhost/b", ["first", "second"]), (carol, "carol@localhost/c", ["second"])]
            for (client, jid, rooms) in readers {
                var got: [(room: String, body: String)] = []
                while got.count < sent.filter({ rooms.contains($0.room) }).count {
                    let message = try await client.expect("message")
                    #expect(message.to == jid, "\(message.xmlString())")
                    #expect(message.from?.hasSuffix("@\(MUC.service)/Alice") == true)
                    got.append((String(message.from?.prefix { $0 != "@" } ?? ""), message.firstChild("body")?.text ?? ""))
                }
                let expected = sent.filter { rooms.contains($0.room) }
                #expect(got.map(\.body) == expected.map(\.body))
                #expect(got.map(\.room) == expected.map(\.room))
            }
        }
    }
}
