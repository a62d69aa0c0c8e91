import ParleyCore
import Testing

@testable import ParleyServer

/// The server keeps who gets an owner's notifications between publishes (`PEPRecipients`):
/// every change that alters it must show in the very next publish.
@Suite struct PEPRecipientScenarios {
    private static func events(_ elements: [XMLElement]) -> [XMLElement] {
        elements.compactMap { $0.pepEvent(node: PEP.nick) }
    }

    private static func itemIDs(_ elements: [XMLElement]) -> [String] {
        events(elements).compactMap { $0.firstChild("item", namespace: PEP.event)?[attribute: "id"] }
    }

    /// Reads until the notification of item `id` arrives; returns the item ids notified until
    /// then (a last item sent on becoming available may come before or after a publish).
    private static func notifications(_ client: TestClient, until id: String) async throws -> [String] {
        var ids: [String] = []
        while !ids.contains(id) { ids += itemIDs([try await client.nextElement()]) }
        return ids
    }

    /// Reads until the client has had a roster push for each of `contacts` with that
    /// subscription: the owner's roster has changed by then.
    private static func rosterPushes(_ client: TestClient, _ contacts: [String: String]) async throws {
        var waiting = contacts
        while !waiting.isEmpty {
            let element = try await client.nextElement()
            guard element.name == "iq", element.type == "set",
                let item = element.firstChild("query", namespace: "jabber:iq:roster")?.firstChild("item", namespace: "jabber:iq:roster"),
                let jid = item[attribute: "jid"], waiting[jid] == (item[attribute: "subscription"] ?? "none")
            else { continue }
            waiting[jid] = nil
        }
    }

    /// Alice online with `+notify`, and `contacts` subscribed to her presence, each online
    /// with `+notify` and having had alice's first item (so the server has made its list).
    private static func published(
        _ server: TestServer, to contacts: [String]
    ) async throws -> (alice: TestClient, contacts: [TestClient]) {
        for contact in contacts { try await Subscribe.establish(server, contact, to: "alice") }
        let alice = try await server.im("alice", available: false)
        try await alice.availableWithCaps(server, as: "alice@localhost/r", notify: [PEP.nick])
        var clients: [TestClient] = []
        for contact in contacts {
            let client = try await server.im(contact, available: false)
            try await client.availableWithCaps(server, as: "\(contact)@localhost/r", notify: [PEP.nick], queried: false)
            clients.append(client)
        }
        for client in [alice] + clients { try await client.sync() }
        let (reply, before) = try await alice.publish(PEP.nick, id: "n1", PEP.nick("Alice"))
        #expect(reply.type == "result", "\(reply.xmlString())")
        #expect(itemIDs(before) == ["n1"])
        for client in clients { #expect(itemIDs(try await client.sync()) == ["n1"]) }
        return (alice, clients)
    }

    /// RFC 6121 §3.2 and §3.3 change the owner's roster, whichever side ends the subscription.
    @Test func aContactWhoseSubscriptionEndsGetsNoFurtherNotification() async throws {
        try await TestServer.with(accounts: TestServer.threeAccounts) { server in
            let (alice, contacts) = try await Self.published(server, to: ["bob", "carol"])
            let (bob, carol) = (contacts[0], contacts[1])
            // Alice cancels bob's subscription; carol cancels her own.
            try await alice.send("<presence to='bob@localhost' type='unsubscribed'/>")
            try await carol.send("<presence to='alice@localhost' type='unsubscribe'/>")
            try await Self.rosterPushes(alice, ["bob@localhost": "none", "carol@localhost": "none"])
            for client in [alice, bob, carol] { try await client.sync() }

            let (_, before) = try await alice.publish(PEP.nick, id: "n2", PEP.nick("Alice 2"))
            #expect(Self.itemIDs(before) == ["n2"], "the owner's own resource still is told")
            #expect(Self.events(try await bob.sync()).isEmpty)
            #expect(Self.events(try await carol.sync()).isEmpty)
        }
    }

    @Test func aContactWhoseSubscriptionBeginsGetsTheNextNotification() async throws {
        try await TestServer.with(accounts: TestServer.threeAccounts) { server in
            let (alice, contacts) = try await Self.published(server, to: ["bob"])
            let carol = try await server.im("carol", available: false)
            try await carol.availableWithCaps(server, as: "carol@localhost/r", notify: [PEP.nick], queried: false)
            try await carol.sync()
            try await carol.send("<presence to='alice@localhost' type='subscribe'/>")
            try await alice.sync()
            try await alice.send("<presence to='carol@localhost' type='subscribed'/>")
            try await Self.rosterPushes(alice, ["carol@localhost": "from"])
            try await alice.sync()
            // The approval also sends carol the last item (XEP-0163 §4.3.4), perhaps later.
            var atCarol = try await carol.sync()
            let (_, before) = try await alice.publish(PEP.nick, id: "n2", PEP.nick("Alice 2"))
            #expect(Self.itemIDs(before) == ["n2"])
            #expect(Self.itemIDs(try await contacts[0].sync()) == ["n2"])
            atCarol += try await carol.sync()
            let ids = Self.itemIDs(atCarol)
            #expect(ids.count == 2 && Set(ids) == ["n1", "n2"], "\(atCarol.map { $0.xmlString() })")
        }
    }

    @Test func aNewResourceWithNotifyGetsTheNextNotificationAndOneThatDropsItDoesNot() async throws {
        try await TestServer.with { server in
            let (alice, contacts) = try await Self.published(server, to: ["bob"])
            let bob = contacts[0]
            let tablet = try await server.im("bob", "tablet", available: false)
            try await tablet.availableWithCaps(server, as: "bob@localhost/tablet", notify: [PEP.nick], queried: false)
            try await alice.publish(PEP.nick, id: "n2", PEP.nick("Alice 2"))
            // Besides the last item (n1) it gets on becoming available.
            #expect(Set(try await Self.notifications(tablet, until: "n2")).isSubset(of: ["n1", "n2"]))
            #expect(Self.itemIDs(try await bob.sync()) == ["n2"])

            // Bob's first resource now announces other features, without the nick's +notify.
            try await bob.availableWithCaps(server, as: "bob@localhost/r", notify: ["urn:xmpp:avatar:metadata"])
            let pep = try #require(server.running.pep)
            let bobR = try JID("bob@localhost/r")
            let deadline = ContinuousClock.now + TestClient.defaultTimeout
            while pep.interests.wants(bobR, PEP.nick) {
                guard ContinuousClock.now < deadline else { throw ScenarioFailure("bob's new features were not taken in") }
                try await Task.sleep(for: .milliseconds(5))
            }
            try await bob.sync()
            try await alice.publish(PEP.nick, id: "n3", PEP.nick("Alice 3"))
            #expect(try await Self.notifications(tablet, until: "n3").contains("n3"))
            #expect(Self.events(try await bob.sync()).isEmpty)

            // A resource that goes unavailable is not told either, and is again once back.
            try await tablet.send("<presence type='unavailable'/>")
            try await tablet.sync()
            try await alice.publish(PEP.nick, id: "n4", PEP.nick("Alice 4"))
            #expect(!Self.itemIDs(try await tablet.sync()).contains("n4"))
            try await tablet.availableWithCaps(server, as: "bob@localhost/tablet", notify: [PEP.nick], queried: false)
            try await alice.publish(PEP.nick, id: "n5", PEP.nick("Alice 5"))
            #expect(try await Self.notifications(tablet, until: "n5").contains("n5"))
        }
    }

    @Test func aNodeMadeWhitelistAfterPublishesNotifiesOnlyTheOwner() async throws {
        try await TestServer.with { server in
            let (alice, contacts) = try await Self.published(server, to: ["bob"])
            let configure = "<configure node='\(PEP.nick)'><x xmlns='jabber:x:data' type='submit'>"
                + "<field var='FORM_TYPE' type='hidden'><value>http://jabber.org/protocol/pubsub#node_config</value></field>"
                + "<field var='pubsub#access_model'><value>whitelist</value></field></x></configure>"
            let (reply, _) = try await alice.owner("set", configure)
            #expect(reply.type == "result", "\(reply.xmlString())")
            let (_, before) = try await alice.publish(PEP.nick, id: "n2", PEP.nick("Alice 2"))
            #expect(Self.itemIDs(before) == ["n2"])
            #expect(Self.events(try await contacts[0].sync()).isEmpty)
        }
    }

    @Test func aContactWhoBlocksTheOwnerGetsNothingAndAContactTheOwnerBlocksNeither() async throws {
        try await TestServer.with(accounts: TestServer.threeAccounts) { server in
            let (alice, contacts) = try await Self.published(server, to: ["bob", "carol"])
            let (bob, carol) = (contacts[0], contacts[1])
            let blockAlice = try await bob.exchange(
                "<iq type='set' id='b1'><block xmlns='urn:xmpp:blocking'><item jid='alice@localhost'/></block></iq>", id: "b1").reply
            #expect(blockAlice.type == "result", "\(blockAlice.xmlString())")
            let blockCarol = try await alice.exchange(
                "<iq type='set' id='b2'><block xmlns='urn:xmpp:blocking'><item jid='carol@localhost'/></block></iq>", id: "b2").reply
            #expect(blockCarol.type == "result", "\(blockCarol.xmlString())")
            for client in [alice, bob, carol] { try await client.sync() }
            let (_, before) = try await alice.publish(PEP.nick, id: "n2", PEP.nick("Alice 2"))
            #expect(Self.itemIDs(before) == ["n2"])
            #expect(Self.events(try await bob.sync()).isEmpty)
            #expect(Self.events(try await carol.sync()).isEmpty)
        }
    }
}
