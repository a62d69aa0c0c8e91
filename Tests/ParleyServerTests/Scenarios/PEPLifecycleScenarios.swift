import NIOConcurrencyHelpers
import ParleyCore
import ParleyStorage
import Testing

@testable import ParleyServer

/// The last published item when a resource appears or a contact is approved (XEP-0163
/// §4.3.4), items surviving a restart, the limits on items, payloads and nodes, and the
/// account's PEP data going with the account.
@Suite struct PEPLifecycleScenarios {
    /// Reads until a notification for `node` arrives (presence and the like may come first).
    private static func nextEvent(_ client: TestClient, node: String, already: [XMLElement] = []) async throws -> XMLElement {
        if let found = already.first(where: { $0.pepEvent(node: node) != nil }) { return found }
        while true {
            let element = try await client.nextElement()
            if element.pepEvent(node: node) != nil { return element }
        }
    }

    @Test func theLastItemComesWithAvailabilityToThoseWhoWantIt() async throws {
        try await TestServer.with { server in
            try await Subscribe.establish(server, "bob", to: "alice")
            let alice = try await server.login("alice", resource: "desk")
            try await alice.publish(PEP.nick, id: "old", PEP.nick("Old"))
            try await alice.publish(PEP.nick, id: "new", PEP.nick("Alice"))

            let bob = try await server.im("bob", available: false)
            let seen = try await bob.availableWithCaps(server, as: "bob@localhost/r", notify: [PEP.nick])
            let message = try await Self.nextEvent(bob, node: PEP.nick, already: seen)
            #expect(message.from == "alice@localhost" && message.to == "bob@localhost/r" && message.type == "headline")
            let item = message.pepEvent(node: PEP.nick)?.firstChild("item", namespace: PEP.event)
            #expect(item?[attribute: "id"] == "new" && item?.firstChild("nick", namespace: PEP.nick)?.text == "Alice")
            #expect(try await bob.sync().compactMap { $0.pepEvent(node: PEP.nick) }.isEmpty, "only the last one, once")

            // The owner's own new resource gets its own last item.
            let phone = try await server.im("alice", "phone", available: false)
            let own = try await phone.availableWithCaps(server, as: "alice@localhost/phone", notify: [PEP.nick], queried: false)
            #expect(try await Self.nextEvent(phone, node: PEP.nick, already: own).to == "alice@localhost/phone")

            // Without +notify for the node, nothing.
            let bot = try await server.im("bob", "bot", available: false)
            let botSeen = try await bot.availableWithCaps(server, as: "bob@localhost/bot", notify: ["urn:xmpp:avatar:metadata"])
            #expect((botSeen + (try await bot.sync())).compactMap { $0.pepEvent(node: PEP.nick) }.isEmpty)
        }
    }

    @Test func theLastItemComesWithSubscriptionApproval() async throws {
        try await TestServer.with { server in
            let alice = try await server.im("alice")
            try await alice.publish(PEP.nick, id: "n", PEP.nick("Alice"))
            let bob = try await server.im("bob", available: false)
            let before = try await bob.availableWithCaps(server, as: "bob@localhost/r", notify: [PEP.nick])
            #expect((before + (try await bob.sync())).compactMap { $0.pepEvent(node: PEP.nick) }.isEmpty, "not a contact yet")

            try await bob.send("<presence to='alice@localhost' type='subscribe'/>")
            _ = try await alice.expect("presence")
            try await alice.send("<presence to='bob@localhost' type='subscribed'/>")
            let message = try await Self.nextEvent(bob, node: PEP.nick)
            #expect(message.pepEvent(node: PEP.nick)?.firstChild("item", namespace: PEP.event)?[attribute: "id"] == "n")
        }
    }

    @Test func itemsSurviveARestart() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            try await alice.publish("urn:xmpp:avatar:metadata", id: "sha", "<metadata xmlns='urn:xmpp:avatar:metadata'><info id='sha' bytes='3' type='image/png'/></metadata>")
            await alice.close()
            try await server.restart()
            let again = try await server.login("alice")
            let reply = try await again.items(of: "alice@localhost", "urn:xmpp:avatar:metadata")
            #expect(reply.pubsubItemIDs == ["sha"])
            let info = reply.firstChild("pubsub", namespace: PEP.pubsub)?.firstChild("items", namespace: PEP.pubsub)?
                .firstChild("item", namespace: PEP.pubsub)?.firstChild("metadata", namespace: "urn:xmpp:avatar:metadata")?.firstChild("info")
            #expect(info?[attribute: "bytes"] == "3")
        }
    }

    @Test func limitsAreRefusedWithTheirErrors() async throws {
        try await TestServer.with({
            $0.pep.maxPayloadBytes = 200
            $0.pep.maxNodesPerAccount = 2
            $0.pep.maxItemsPerNode = 3
        }) { server in
            let alice = try await server.login("alice")
            let big = PEP.nick(String(repeating: "x", count: 300))
            let (tooBig, _) = try await alice.publish(PEP.nick, id: "big", big)
            #expect(tooBig.stanzaErrorCondition == .notAcceptable && tooBig.pubsubErrorCondition == "payload-too-big", "\(tooBig.xmlString())")
            #expect(tooBig.stanzaErrorText?.contains("200") == true)

            let (tooMany, _) = try await alice.publish(PEP.nick, id: "a", PEP.nick("a"), options: ["pubsub#max_items": "4"])
            #expect(tooMany.stanzaErrorCondition == .notAcceptable && tooMany.stanzaErrorText?.contains("3") == true, "\(tooMany.xmlString())")

            for id in ["1", "2", "3", "4"] {
                let (reply, _) = try await alice.publish(PEP.nick, id: id, PEP.nick(id), options: ["pubsub#max_items": "max"])
                #expect(reply.type == "result", "\(reply.xmlString())")
            }
            #expect(try await alice.items(of: "alice@localhost", PEP.nick).pubsubItemIDs == ["2", "3", "4"], "the oldest made room")

            try await alice.publish("urn:example:second", id: "i", PEP.nick("i"))
            let (third, _) = try await alice.publish("urn:example:third", id: "i", PEP.nick("i"))
            #expect(third.stanzaErrorCondition == .policyViolation && third.stanzaErrorText?.contains("2") == true, "\(third.xmlString())")
            let created = try await alice.exchange(
                "<iq type='set' id='c'><pubsub xmlns='\(PEP.pubsub)'><create node='urn:example:third'/></pubsub></iq>", id: "c").reply
            #expect(created.stanzaErrorCondition == .policyViolation)

            let (longName, _) = try await alice.publish(String(repeating: "n", count: 1024), id: "i", PEP.nick("i"))
            #expect(longName.stanzaErrorCondition == .notAcceptable && longName.stanzaErrorText?.contains("1023") == true)
            let (longID, _) = try await alice.publish(PEP.nick, id: String(repeating: "i", count: 1024), PEP.nick("i"))
            #expect(longID.stanzaErrorCondition == .notAcceptable)
        }
    }

    @Test func removingTheAccountRemovesItsPEPData() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            try await alice.publish(PEP.nick, id: "n", PEP.nick("Alice"))
            let reply = try await alice.query("<iq type='set' id='rm'><query xmlns='jabber:iq:register'><remove/></query></iq>", id: "rm")
            #expect(reply.type == "result")
            _ = try await alice.expectStreamError(.notAuthorized)
            try await server.waitUntilOffline("alice")
            try await server.createAccount("alice", password: "alice-password")
            let again = try await server.login("alice")
            #expect(try await again.items(of: "alice@localhost", PEP.nick).stanzaErrorCondition == .itemNotFound)
            #expect(try await server.running.storage.pepNodes(of: "alice").isEmpty)
        }
    }
}

/// The in-process API other modules use (vCard-avatar sync, bookmarks conversion): the
/// same publishing, reading and retracting, announced on the event bus.
@Suite struct PEPServiceAPIScenarios {
    @Test func otherModulesPublishReadAndRetractThroughTheService() async throws {
        try await TestServer.with { server in
            try await Subscribe.establish(server, "bob", to: "alice")
            let bob = try await server.im("bob", available: false)
            try await bob.availableWithCaps(server, as: "bob@localhost/r", notify: ["urn:xmpp:avatar:metadata"])
            let pep = try #require(server.running.pep)
            let seen = NIOLockedValueBox([String]())
            server.running.context.events.subscribe { event in
                switch event {
                case .pepItemPublished(let owner, let node, let id, _): seen.withLockedValue { $0.append("published \(owner) \(node) \(id)") }
                case .pepItemRetracted(let owner, let node, let id): seen.withLockedValue { $0.append("retracted \(owner) \(node) \(id)") }
                default: break
                }
            }
            let alice = try JID("alice@localhost")
            let metadata = XMLElement("metadata", namespace: "urn:xmpp:avatar:metadata")
            let id = try await pep.publish(owner: alice, node: "urn:xmpp:avatar:metadata", itemID: "v1", payload: metadata)
            #expect(id == "v1")
            let event = try await bob.expect("message")
            #expect(event.pepEvent(node: "urn:xmpp:avatar:metadata")?.firstChild("item", namespace: PEP.event)?[attribute: "id"] == "v1")
            #expect(try await pep.items(owner: alice, node: "urn:xmpp:avatar:metadata", requester: alice).map(\.id) == ["v1"])
            try await pep.retract(owner: alice, node: "urn:xmpp:avatar:metadata", itemID: "v1", notify: false)
            #expect(try await pep.items(owner: alice, node: "urn:xmpp:avatar:metadata", requester: alice).isEmpty)
            #expect(
                seen.withLockedValue { $0 } == [
                    "published alice@localhost urn:xmpp:avatar:metadata v1", "retracted alice@localhost urn:xmpp:avatar:metadata v1",
                ])
            await #expect(throws: StanzaError.self) {
                try await pep.items(owner: alice, node: "urn:xmpp:avatar:metadata", requester: try JID("carol@localhost"))
            }
        }
    }
}
