import ParleyCore
import Testing

/// XEP-0163 on the wire: publishing notifies the owner's and its contacts' resources that
/// asked with `+notify` (XEP-0115 caps, verified by their hash) and nobody else; items are
/// read, retracted, configured and deleted as XEP-0060 says.
@Suite struct PEPScenarios {
    private static func events(_ elements: [XMLElement], _ name: String = "items", node: String = PEP.nick) -> [XMLElement] {
        elements.compactMap { $0.pepEvent(name, node: node) }
    }

    @Test func publishingNotifiesEntitledResourcesThatAskedWithNotify() async throws {
        try await TestServer.with(accounts: TestServer.threeAccounts) { server in
            try await Subscribe.establish(server, "bob", to: "alice")
            let alice = try await server.im("alice", "phone", available: false)
            try await alice.availableWithCaps(server, as: "alice@localhost/phone", notify: [PEP.nick])
            let quiet = try await server.im("alice", "quiet", available: false)
            try await quiet.available()
            let bob = try await server.im("bob", available: false)
            // The same client software as alice's phone: its ver is known by now.
            try await bob.availableWithCaps(server, as: "bob@localhost/r", notify: [PEP.nick], queried: false)
            let bobBot = try await server.im("bob", "bot", available: false)
            try await bobBot.availableWithCaps(server, as: "bob@localhost/bot", notify: ["urn:xmpp:avatar:metadata"])
            let carol = try await server.im("carol", available: false)
            try await carol.availableWithCaps(server, as: "carol@localhost/r", notify: [PEP.nick], queried: false)
            for client in [alice, quiet, bob, bobBot, carol] { try await client.sync() }

            let (reply, before) = try await alice.publish(PEP.nick, id: "n1", PEP.nick("Alice"))
            #expect(reply.type == "result", "\(reply.xmlString())")
            let published = reply.firstChild("pubsub", namespace: PEP.pubsub)?.firstChild("publish", namespace: PEP.pubsub)
            #expect(published?[attribute: "node"] == PEP.nick)
            #expect(published?.firstChild("item", namespace: PEP.pubsub)?[attribute: "id"] == "n1")
            // The owner's own resource with +notify is told too.
            #expect(Self.events(before).count == 1, "\(before.map { $0.xmlString() })")

            let atBob = try await bob.sync()
            let message = try atBob.one("notification") { $0.pepEvent(node: PEP.nick) != nil }
            #expect(message.from == "alice@localhost" && message.to == "bob@localhost/r" && message.type == "headline")
            let item = try #require(message.pepEvent(node: PEP.nick)?.firstChild("item", namespace: PEP.event))
            #expect(item[attribute: "id"] == "n1")
            #expect(item.firstChild("nick", namespace: PEP.nick)?.text == "Alice")
            #expect(Self.events(try await bobBot.sync()).isEmpty, "no +notify for the nick node")
            #expect(Self.events(try await quiet.sync()).isEmpty, "no caps at all")
            #expect(Self.events(try await carol.sync()).isEmpty, "no presence subscription to alice")

            // Without an id the server makes one, and says which.
            let (generated, _) = try await alice.publish(PEP.nick, PEP.nick("Alice B."))
            let id = try #require(
                generated.firstChild("pubsub", namespace: PEP.pubsub)?.firstChild("publish", namespace: PEP.pubsub)?
                    .firstChild("item", namespace: PEP.pubsub)?[attribute: "id"])
            #expect(!id.isEmpty)
            let second = try Self.events(try await bob.sync()).one("notification") { _ in true }
            #expect(second.firstChild("item", namespace: PEP.event)?[attribute: "id"] == id)
        }
    }

    /// XEP-0115 §5.4: a ver is cached only when the answer hashes to it. A client lying
    /// about its ver is not believed for others announcing the same ver: they are asked.
    @Test func capsAreCachedByVerifiedVerOnly() async throws {
        try await TestServer.with { server in
            try await Subscribe.establish(server, "bob", to: "alice")
            let alice = try await server.im("alice", available: false)
            try await alice.available()
            let first = try await server.im("bob", "first", available: false)
            try await first.availableWithCaps(server, as: "bob@localhost/first", notify: [PEP.nick])
            let second = try await server.im("bob", "second", available: false)
            try await second.availableWithCaps(server, as: "bob@localhost/second", notify: [PEP.nick], queried: false)

            // A ver that does not match the features given for it.
            let wrong = try PEP.ver(notify: ["urn:xmpp:avatar:metadata"])
            let liar = try await server.im("bob", "liar", available: false)
            try await liar.availableWithCaps(server, as: "bob@localhost/liar", notify: [PEP.nick], ver: wrong)
            let other = try await server.im("bob", "other", available: false)
            try await other.availableWithCaps(server, as: "bob@localhost/other", notify: [], ver: wrong, queried: true)
            for client in [first, second, liar, other] { try await client.sync() }
            // A presence repeating the same caps is not asked about again, even unverified.
            try await liar.send("<presence><show>away</show><c xmlns='\(PEP.caps)' hash='sha-1' node='\(PEP.capsNode)' ver='\(wrong)'/></presence>")
            let repeated = try await liar.sync()
            #expect(!repeated.contains { $0.name == "iq" }, "\(repeated.map { $0.xmlString() })")
            try await liar.expectSilence(for: .milliseconds(200))

            try await alice.publish(PEP.nick, id: "x", PEP.nick("A"))
            #expect(Self.events(try await first.sync()).count == 1)
            #expect(Self.events(try await second.sync()).count == 1, "the cached ver stands for its features")
            #expect(Self.events(try await other.sync()).isEmpty, "its own answer has no +notify")
        }
    }

    @Test func itemsAllByIdAndNewest() async throws {
        try await TestServer.with(accounts: TestServer.threeAccounts) { server in
            try await Subscribe.establish(server, "bob", to: "alice")
            let alice = try await server.login("alice")
            for id in ["a", "b", "c"] {
                let (reply, _) = try await alice.publish(PEP.nick, id: id, PEP.nick(id), options: ["pubsub#max_items": "10"])
                #expect(reply.type == "result", "\(reply.xmlString())")
            }
            #expect(try await alice.items(of: "alice@localhost", PEP.nick).pubsubItemIDs == ["a", "b", "c"])
            let bob = try await server.login("bob")
            let all = try await bob.items(of: "alice@localhost", PEP.nick)
            #expect(all.pubsubItemIDs == ["a", "b", "c"])
            let payload = all.firstChild("pubsub", namespace: PEP.pubsub)?.firstChild("items", namespace: PEP.pubsub)?
                .children("item", namespace: PEP.pubsub).last?.firstChild("nick", namespace: PEP.nick)
            #expect(payload?.text == "c")
            #expect(try await bob.items(of: "alice@localhost", PEP.nick, "<item id='b'/>").pubsubItemIDs == ["b"])
            #expect(try await bob.items(of: "alice@localhost", PEP.nick, "<item id='c'/><item id='a'/>").pubsubItemIDs == ["c", "a"])
            #expect(try await bob.items(of: "alice@localhost", PEP.nick, attributes: " max_items='2'").pubsubItemIDs == ["b", "c"])

            let missingItem = try await bob.items(of: "alice@localhost", PEP.nick, "<item id='zzz'/>")
            #expect(missingItem.stanzaErrorCondition == .itemNotFound)
            let missingNode = try await bob.items(of: "alice@localhost", "urn:example:none")
            #expect(missingNode.stanzaErrorCondition == .itemNotFound, "\(missingNode.xmlString())")
            let badMax = try await bob.items(of: "alice@localhost", PEP.nick, attributes: " max_items='0'")
            #expect(badMax.stanzaErrorCondition == .badRequest)
            let noNode = try await bob.exchange(
                "<iq type='get' id='nn' to='alice@localhost'><pubsub xmlns='\(PEP.pubsub)'><items/></pubsub></iq>", id: "nn")
            #expect(noNode.reply.stanzaErrorCondition == .badRequest && noNode.reply.pubsubErrorCondition == "nodeid-required")
        }
    }

    @Test func retractNotifiesOnlyWhenAsked() async throws {
        try await TestServer.with { server in
            try await Subscribe.establish(server, "bob", to: "alice")
            let alice = try await server.login("alice")
            let bob = try await server.im("bob", available: false)
            try await bob.availableWithCaps(server, as: "bob@localhost/r", notify: [PEP.nick])
            try await bob.sync()
            try await alice.publish(PEP.nick, id: "a", PEP.nick("a"), options: ["pubsub#max_items": "10"])
            try await alice.publish(PEP.nick, id: "b", PEP.nick("b"))
            #expect(Self.events(try await bob.sync()).count == 2)

            let retract = "<iq type='set' id='r1'><pubsub xmlns='\(PEP.pubsub)'><retract node='\(PEP.nick)' notify='true'><item id='b'/></retract></pubsub></iq>"
            #expect(try await alice.exchange(retract, id: "r1").reply.type == "result")
            let event = try Self.events(try await bob.sync()).one("retraction") { _ in true }
            #expect(event.firstChild("retract", namespace: PEP.event)?[attribute: "id"] == "b")
            #expect(event.firstChild("item", namespace: PEP.event) == nil)

            let quietly = "<iq type='set' id='r2'><pubsub xmlns='\(PEP.pubsub)'><retract node='\(PEP.nick)'><item id='a'/></retract></pubsub></iq>"
            #expect(try await alice.exchange(quietly, id: "r2").reply.type == "result")
            #expect(Self.events(try await bob.sync()).isEmpty)
            #expect(try await alice.items(of: "alice@localhost", PEP.nick).pubsubItemIDs.isEmpty)
            #expect(try await alice.exchange(quietly.replacingOccurrences(of: "r2", with: "r3"), id: "r3").reply.stanzaErrorCondition == .itemNotFound)
            let byBob = try await bob.exchange(quietly.replacingOccurrences(of: "type='set' id='r2'", with: "type='set' id='r4' to='alice@localhost'"), id: "r4")
            #expect(byBob.reply.stanzaErrorCondition == .forbidden, "only the owner retracts")
        }
    }

    @Test func deletingANodeNotifiesAndRemovesItsItems() async throws {
        try await TestServer.with { server in
            try await Subscribe.establish(server, "bob", to: "alice")
            let alice = try await server.login("alice")
            let bob = try await server.im("bob", available: false)
            try await bob.availableWithCaps(server, as: "bob@localhost/r", notify: [PEP.nick])
            try await alice.publish(PEP.nick, id: "a", PEP.nick("a"))
            try await bob.sync()
            let byBob = try await bob.exchange(
                "<iq type='set' id='d0' to='alice@localhost'><pubsub xmlns='\(PEP.owner)'><delete node='\(PEP.nick)'/></pubsub></iq>", id: "d0")
            #expect(byBob.reply.stanzaErrorCondition == .forbidden)
            #expect(try await alice.owner("set", "<delete node='\(PEP.nick)'/>").reply.type == "result")
            let deletion = try Self.events(try await bob.sync(), "delete").one("deletion") { _ in true }
            #expect(deletion[attribute: "node"] == PEP.nick)
            #expect(try await bob.items(of: "alice@localhost", PEP.nick).stanzaErrorCondition == .itemNotFound)
            #expect(try await alice.owner("set", "<delete node='\(PEP.nick)'/>").reply.stanzaErrorCondition == .itemNotFound)
        }
    }

    @Test func configuringANode() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            try await alice.publish(PEP.nick, id: "a", PEP.nick("a"))
            let form = try await alice.owner("get", "<configure node='\(PEP.nick)'/>").reply
            #expect(form.type == "result", "\(form.xmlString())")
            let fields = Self.fields(form)
            #expect(fields["pubsub#access_model"] == ["presence"] && fields["pubsub#max_items"] == ["1"])
            #expect(fields["pubsub#persist_items"] == ["1"] && fields["pubsub#send_last_published_item"] == ["on_sub_and_presence"])

            let submit = Self.submit(["pubsub#access_model": "open", "pubsub#max_items": "2", "pubsub#title": "My nick"])
            #expect(try await alice.owner("set", "<configure node='\(PEP.nick)'>\(submit)</configure>").reply.type == "result")
            let changed = Self.fields(try await alice.owner("get", "<configure node='\(PEP.nick)'/>").reply)
            #expect(changed["pubsub#access_model"] == ["open"] && changed["pubsub#max_items"] == ["2"] && changed["pubsub#title"] == ["My nick"])
            for id in ["b", "c"] { try await alice.publish(PEP.nick, id: id, PEP.nick(id)) }
            #expect(try await alice.items(of: "alice@localhost", PEP.nick).pubsubItemIDs == ["b", "c"], "max_items 2 now")

            let tooMany = try await alice.owner("set", "<configure node='\(PEP.nick)'>\(Self.submit(["pubsub#max_items": "1000"]))</configure>")
            #expect(tooMany.reply.stanzaErrorCondition == .notAcceptable && tooMany.reply.stanzaErrorText?.contains("256") == true)
            let bogus = try await alice.owner("set", "<configure node='\(PEP.nick)'>\(Self.submit(["pubsub#access_model": "authorize"]))</configure>")
            #expect(bogus.reply.stanzaErrorCondition == .notAcceptable)
            let missing = try await alice.owner("get", "<configure node='urn:example:none'/>")
            #expect(missing.reply.stanzaErrorCondition == .itemNotFound)
            #expect(try await alice.owner("set", "<purge node='\(PEP.nick)'/>").reply.type == "result")
            #expect(try await alice.items(of: "alice@localhost", PEP.nick).pubsubItemIDs.isEmpty)
            let defaults = Self.fields(try await alice.owner("get", "<default/>").reply)
            #expect(defaults["pubsub#access_model"] == ["presence"])
        }
    }

    static func fields(_ reply: XMLElement) -> [String: [String]] {
        let container = reply.firstChild("pubsub", namespace: PEP.owner)?.elements.first
        let form = container?.firstChild("x", namespace: XMLNamespace.dataForms)
        var result: [String: [String]] = [:]
        for field in form?.children("field", namespace: XMLNamespace.dataForms) ?? [] {
            result[field[attribute: "var"] ?? ""] = field.children("value", namespace: XMLNamespace.dataForms).map(\.text)
        }
        return result
    }

    static func submit(_ values: [String: String]) -> String {
        "<x xmlns='jabber:x:data' type='submit'><field var='FORM_TYPE' type='hidden'><value>\(PEP.pubsub)#node_config</value></field>"
            + values.sorted { $0.key < $1.key }.map { "<field var='\($0.key)'><value>\($0.value)</value></field>" }.joined() + "</x>"
    }
}
