import ParleyCore
import Testing

/// RFC 6121 §2 on the wire: roster get, set and remove with pushes to every interested
/// resource, versioning (§2.6), and the server's limits.
@Suite struct IMRosterScenarios {
    @Test func setAddsAnItemPushedToEveryInterestedResourceAndGetReturnsIt() async throws {
        try await TestServer.with(accounts: TestServer.threeAccounts) { server in
            let phone = try await server.im("alice", "phone", available: false)
            let laptop = try await server.im("alice", "laptop", available: false)
            let uninterested = try await server.login("alice", resource: "bot")
            let empty = try await phone.rosterGet()
            #expect(empty.firstChild("query", namespace: IM.roster)?.elements.isEmpty == true)
            let reply = try await phone.rosterSet("<item jid='carol@localhost' name='Carol'><group>Friends</group><group>Work</group></item>")
            #expect(reply.type == "result")
            for client in [phone, laptop] {
                let item = try await client.expectPush("carol@localhost", subscription: "none")
                #expect(item[attribute: "name"] == "Carol")
                #expect(item.children("group", namespace: IM.roster).map(\.text).sorted() == ["Friends", "Work"])
            }
            try await uninterested.expectNothingPending("a resource that never asked for the roster gets no pushes")
            let items = try await laptop.rosterItems()
            #expect(items.count == 1 && items["carol@localhost"]?[attribute: "name"] == "Carol")
            // An update replaces name and groups; nothing of the subscription changes.
            #expect(try await laptop.rosterSet("<item jid='carol@localhost' name='C.'/>").type == "result")
            for client in [phone, laptop] {
                let item = try await client.expectPush("carol@localhost", subscription: "none")
                #expect(item[attribute: "name"] == "C." && item.children("group").isEmpty)
            }
            try await server.im("carol").expectNothingPending("adding a contact tells the contact nothing")
        }
    }

    @Test func removingAnItemPushesTheRemovalAndAnUnknownOneIsItemNotFound() async throws {
        try await TestServer.with { server in
            let alice = try await server.im("alice", available: false)
            #expect(try await alice.rosterSet("<item jid='bob@localhost'/>").type == "result")
            try await alice.expectPush("bob@localhost", subscription: "none")
            let (reply, pushes) = try await alice.rosterRemove("bob@localhost")
            #expect(reply.type == "result")
            #expect(pushes.count == 1 && pushes.first?.isPush("bob@localhost", subscription: "remove") == true)
            #expect(try await alice.rosterItems().isEmpty)
            let missing = try await alice.rosterSet("<item jid='nobody@localhost' subscription='remove'/>")
            #expect(missing.type == "error" && missing.stanzaErrorCondition == .itemNotFound)
        }
    }

    /// §2.5.2: removing a contact with a Both subscription unsubscribes and cancels: the
    /// contact gets `unsubscribe` and `unsubscribed` and its item goes to None, and each side
    /// gets the other's unavailable presence.
    @Test func removingABothContactEndsBothSubscriptionsAndPresence() async throws {
        try await TestServer.with { server in
            let (alice, bob) = try await Subscribe.mutualOnline(server)
            let (reply, atAlice) = try await alice.rosterRemove("bob@localhost")
            #expect(reply.type == "result")
            _ = try atAlice.one("removal push") { $0.isPush("bob@localhost", subscription: "remove") }
            _ = try atAlice.one("bob's unavailable") { $0.isPresence(from: "bob@localhost/r", type: "unavailable") }
            #expect(atAlice.count == 2, "\(atAlice.map { $0.xmlString() })")
            let atBob = try await bob.sync()
            _ = try atBob.one("unsubscribe") { $0.isPresence(from: "alice@localhost", type: "unsubscribe") }
            _ = try atBob.one("unsubscribed") { $0.isPresence(from: "alice@localhost", type: "unsubscribed") }
            _ = try atBob.one("alice's unavailable") { $0.isPresence(from: "alice@localhost/r", type: "unavailable") }
            _ = try atBob.one("push of to") { $0.isPush("alice@localhost", subscription: "to") }
            _ = try atBob.one("push of none") { $0.isPush("alice@localhost", subscription: "none") }
            #expect(atBob.count == 5, "\(atBob.map { $0.xmlString() })")
            #expect(try await bob.rosterItems()["alice@localhost"]?[attribute: "subscription"] == "none")
            // No presence either way any more.
            try await alice.send("<presence><status>x</status></presence>")
            _ = try await alice.expectPresence(from: "alice@localhost/r")
            try await bob.send("<presence><status>y</status></presence>")
            _ = try await bob.expectPresence(from: "bob@localhost/r")
            try await alice.expectNothingPending()
            try await bob.expectNothingPending()
        }
    }

    /// Removing a contact whose request is pending refuses it: the requester's ask clears.
    @Test func removingAPendingRequesterRefusesTheRequest() async throws {
        try await TestServer.with { server in
            let bob = try await server.im("bob")
            let alice = try await server.im("alice")
            try await bob.send("<presence to='alice@localhost' type='subscribe'/>")
            try await bob.expectPush("alice@localhost", subscription: "none", ask: true)
            try await alice.expectPresence(from: "bob@localhost", type: "subscribe")
            // Not in alice's roster, but the request is: removing it answers it.
            let (reply, pushes) = try await alice.rosterRemove("bob@localhost")
            #expect(reply.type == "result")
            #expect(pushes.allSatisfy { $0.isPush("bob@localhost", subscription: "remove") }, "\(pushes.map { $0.xmlString() })")
            try await bob.expectPresence(from: "alice@localhost", type: "unsubscribed")
            try await bob.expectPush("alice@localhost", subscription: "none")
            try await server.disconnect("alice", alice)
            try await server.im("alice", "again").expectNothingPending("the request is gone")
        }
    }

    /// XEP-0237 / §2.6: the current version gets an empty result; an older one an empty
    /// result and then the changes since as pushes, a removal included.
    @Test func rosterVersioningSendsOnlyTheChanges() async throws {
        try await TestServer.with(accounts: TestServer.threeAccounts) { server in
            let login = try await server.connect()
            try await login.secureStream()
            #expect(try await login.authenticateSCRAM(username: "alice", password: "alice-password") == .success)
            let features = try await login.openStream()
            #expect(features.firstChild("ver", namespace: "urn:xmpp:features:rosterver") != nil)
            await login.close()

            let alice = try await server.im("alice", available: false)
            #expect(try await alice.rosterSet("<item jid='bob@localhost'/>").type == "result")
            try await alice.expectPush("bob@localhost", subscription: "none")
            let full = try await alice.rosterGet()
            let cached = try #require(full.firstChild("query", namespace: IM.roster)?[attribute: "ver"])
            let same = try await alice.rosterGet(ver: cached)
            #expect(same.elements.isEmpty, "same version: an empty result, got \(same.xmlString())")

            #expect(try await alice.rosterSet("<item jid='carol@localhost'/>").type == "result")
            try await alice.expectPush("carol@localhost", subscription: "none")
            let (reply, removal) = try await alice.rosterRemove("bob@localhost")
            #expect(reply.type == "result" && removal.count == 1 && removal.first?.isPush("bob@localhost", subscription: "remove") == true)

            let other = try await server.login("alice", resource: "cached")
            let older = try await other.rosterGet(ver: cached)
            #expect(older.elements.isEmpty, "older version: an empty result, got \(older.xmlString())")
            let pushes = try await other.sync()
            #expect(pushes.count == 2, "\(pushes.map { $0.xmlString() })")
            #expect(pushes.first?.isPush("carol@localhost", subscription: "none") == true)
            #expect(pushes.last?.isPush("bob@localhost", subscription: "remove") == true)
            let versions = pushes.compactMap { $0.firstChild("query", namespace: IM.roster)?[attribute: "ver"] }
            #expect(versions.count == 2 && versions != [cached, cached])
            // The last push's version is current now.
            #expect(try await other.rosterGet(ver: versions.last).elements.isEmpty)
        }
    }

    @Test func rosterLimitsAreEnforced() async throws {
        try await TestServer.with(accounts: TestServer.threeAccounts, { $0.roster.maxItems = 2 }) { server in
            let alice = try await server.im("alice", available: false)
            for contact in ["bob", "carol"] {
                #expect(try await alice.rosterSet("<item jid='\(contact)@localhost'/>").type == "result")
                try await alice.expectPush("\(contact)@localhost", subscription: "none")
            }
            let full = try await alice.rosterSet("<item jid='dave@localhost'/>")
            #expect(full.type == "error" && full.stanzaErrorCondition == .notAllowed)
            // Editing an item already there is still allowed.
            #expect(try await alice.rosterSet("<item jid='bob@localhost' name='Bob'/>").type == "result")
            try await alice.expectPush("bob@localhost", subscription: "none")
            let long = try await alice.rosterSet("<item jid='carol@localhost' name='\(String(repeating: "n", count: 2000))'/>")
            #expect(long.type == "error" && long.stanzaErrorCondition == .notAcceptable)
            let two = try await alice.rosterSet("<item jid='bob@localhost'/><item jid='carol@localhost'/>")
            #expect(two.type == "error" && two.stanzaErrorCondition == .badRequest)
            let myself = try await alice.rosterSet("<item jid='alice@localhost'/>")
            #expect(myself.type == "error")
            // RFC 6121 §2.3.3 / §2.4.3: a group named twice, in a new item or an edit.
            for contact in ["dave", "bob"] {
                let twice = try await alice.rosterSet("<item jid='\(contact)@localhost'><group>Friends</group><group>Friends</group></item>")
                #expect(twice.type == "error" && twice.stanzaErrorCondition == .badRequest, "\(twice.xmlString())")
            }
            try await alice.expectNothingPending()
            #expect(try await alice.rosterItems().count == 2)
        }
    }

    @Test func anotherUsersRosterCannotBeReadOrChanged() async throws {
        try await TestServer.with { server in
            let alice = try await server.im("alice", available: false)
            let get = try await alice.query("<iq type='get' id='g' to='bob@localhost'><query xmlns='jabber:iq:roster'/></iq>", id: "g")
            #expect(get.type == "error")
            let set = try await alice.query(
                "<iq type='set' id='s' to='bob@localhost'><query xmlns='jabber:iq:roster'><item jid='carol@localhost'/></query></iq>", id: "s")
            #expect(set.type == "error")
        }
    }
}
