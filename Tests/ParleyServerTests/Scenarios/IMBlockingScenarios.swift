import ParleyCore
import Testing

/// XEP-0191 on the wire: the block list and its pushes, and what blocking does to messages,
/// iqs and presence in both directions.
@Suite struct IMBlockingScenarios {
    private static func blocklist(_ client: TestClient) async throws -> [String] {
        let reply = try await client.query("<iq type='get' id='bl'><blocklist xmlns='urn:xmpp:blocking'/></iq>", id: "bl")
        #expect(reply.type == "result")
        return (reply.firstChild("blocklist", namespace: IM.blocking)?.children("item").compactMap { $0[attribute: "jid"] } ?? []).sorted()
    }

    private static func change(_ client: TestClient, _ verb: String, _ jids: [String]) async throws {
        let id = "\(verb)-\(UInt32.random(in: 0 ... .max))"
        let items = jids.map { "<item jid='\($0)'/>" }.joined()
        let reply = try await client.query("<iq type='set' id='\(id)'><\(verb) xmlns='urn:xmpp:blocking'>\(items)</\(verb)></iq>", id: id)
        #expect(reply.type == "result", "\(reply.xmlString())")
    }

    private static func expectBlockPush(_ client: TestClient, _ verb: String, _ jids: [String]) async throws {
        let push = try await client.expect("iq")
        #expect(push.type == "set" && (push.from == nil || push.from == "alice@localhost"))
        let payload = try #require(push.firstChild(verb, namespace: IM.blocking), "\(push.xmlString())")
        #expect(payload.children("item").compactMap { $0[attribute: "jid"] }.sorted() == jids.sorted())
    }

    @Test func blockUnblockAndUnblockAllArePushedToInterestedResources() async throws {
        try await TestServer.with(accounts: TestServer.threeAccounts) { server in
            let phone = try await server.login("alice", resource: "phone")
            let laptop = try await server.login("alice", resource: "laptop")
            let uninterested = try await server.login("alice", resource: "bot")
            #expect(try await Self.blocklist(phone).isEmpty)
            #expect(try await Self.blocklist(laptop).isEmpty)
            try await Self.change(phone, "block", ["bob@localhost", "carol@localhost"])
            for client in [phone, laptop] { try await Self.expectBlockPush(client, "block", ["bob@localhost", "carol@localhost"]) }
            #expect(try await Self.blocklist(laptop) == ["bob@localhost", "carol@localhost"])
            try await Self.change(laptop, "unblock", ["bob@localhost"])
            for client in [phone, laptop] { try await Self.expectBlockPush(client, "unblock", ["bob@localhost"]) }
            #expect(try await Self.blocklist(phone) == ["carol@localhost"])
            try await Self.change(phone, "block", ["localhost"])
            for client in [phone, laptop] { try await Self.expectBlockPush(client, "block", ["localhost"]) }
            try await Self.change(phone, "unblock", [])
            for client in [phone, laptop] { try await Self.expectBlockPush(client, "unblock", []) }
            #expect(try await Self.blocklist(phone).isEmpty)
            try await uninterested.expectNothingPending("it never asked for the block list")
            let empty = try await phone.query("<iq type='set' id='e'><block xmlns='urn:xmpp:blocking'/></iq>", id: "e")
            #expect(empty.type == "error" && empty.stanzaErrorCondition == .badRequest)
        }
    }

    /// §3.3, §3.5: the blocked contact sees the user go unavailable, its messages and iqs
    /// bounce as if the user were offline, the user's own sends are refused with
    /// `<blocked/>`, and no presence passes either way — until unblocked.
    @Test func aBlockedContactIsCutOffBothWays() async throws {
        try await TestServer.with { server in
            try await Subscribe.establish(server, "alice", to: "bob")
            try await Subscribe.establish(server, "bob", to: "alice")
            let bob = try await server.im("bob")
            let alice = try await server.im("alice")
            _ = try await alice.expectPresence(from: "bob@localhost/r")
            _ = try await bob.expectPresence(from: "alice@localhost/r")
            try await Self.change(alice, "block", ["bob@localhost"])
            _ = try await bob.expectPresence(from: "alice@localhost/r", type: "unavailable")
            try await bob.expectNothingPending()

            try await bob.sendMessage(to: "alice@localhost", id: "b1")
            let bounced = try await bob.expect("message")
            #expect(bounced.type == "error" && bounced.id == "b1" && bounced.stanzaErrorCondition == .serviceUnavailable)
            try await bob.sendMessage(to: "alice@localhost/r", id: "b2")
            #expect(try await bob.expect("message").stanzaErrorCondition == .serviceUnavailable)
            let iq = try await bob.query("<iq type='get' id='b3' to='alice@localhost/r'><query xmlns='jabber:iq:version'/></iq>", id: "b3")
            #expect(iq.type == "error" && iq.stanzaErrorCondition == .serviceUnavailable)

            try await alice.sendMessage(to: "bob@localhost", id: "a1")
            let refused = try await alice.expect("message")
            #expect(refused.type == "error" && refused.id == "a1" && refused.stanzaErrorCondition == .notAcceptable)
            #expect(refused.firstChild("error")?.firstChild("blocked", namespace: "urn:xmpp:blocking:errors") != nil, "\(refused.xmlString())")

            try await alice.send("<presence><status>hidden</status></presence>")
            _ = try await alice.expectPresence(from: "alice@localhost/r")
            try await bob.send("<presence><status>unseen</status></presence>")
            _ = try await bob.expectPresence(from: "bob@localhost/r")
            try await alice.send("<presence to='bob@localhost/r'/>")
            try await alice.expectNothingPending()
            try await bob.expectNothingPending()
            // A subscription request from the blocked contact does not get through either.
            try await bob.send("<presence to='alice@localhost' type='unsubscribe'/>")
            try await bob.sync()
            try await alice.expectNothingPending()

            try await Self.change(alice, "unblock", ["bob@localhost"])
            try await bob.sendMessage(to: "alice@localhost", id: "b4")
            try await alice.expectMessage(id: "b4")
        }
    }

    /// Blocking a contact that never saw the user's presence tells it nothing: no
    /// unavailable presence, which would reveal the user's full JID (RFC 6121 §4: presence
    /// goes only to subscribers).
    @Test func blockingANonSubscriberSendsItNothing() async throws {
        try await TestServer.with { server in
            let bob = try await server.im("bob")
            let alice = try await server.im("alice")
            try await Self.change(alice, "block", ["bob@localhost"])
            try await alice.sync()
            try await bob.expectNothingPending()
        }
    }
}
