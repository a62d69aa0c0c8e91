import ParleyCore
import ParleyTestSupport
import Testing

/// Who may read a PEP node (XEP-0060 §4.5 access models, §6.5.9 errors), publish-options
/// as preconditions (§7.1.5), and what an account's disco shows of its PEP service.
@Suite struct PEPAccessScenarios {
    /// alice has bob as a contact with a subscription (in her roster group "Friends" when
    /// `group`); carol has nothing to do with her.
    private static func setUp(_ server: TestServer) async throws -> (alice: TestClient, bob: TestClient, carol: TestClient) {
        try await Subscribe.establish(server, "bob", to: "alice")
        let alice = try await server.login("alice")
        let grouped = try await alice.rosterSet("<item jid='bob@localhost'><group>Friends</group></item>")
        #expect(grouped.type == "result")
        return (alice, try await server.login("bob"), try await server.login("carol"))
    }

    private static func publish(_ alice: TestClient, _ node: String, _ options: [String: String]) async throws {
        let (reply, _) = try await alice.publish(node, id: "i", PEP.nick("x"), options: options)
        #expect(reply.type == "result", "\(reply.xmlString())")
    }

    private static func expectRefused(
        _ reply: XMLElement, _ condition: StanzaErrorCondition, _ pubsub: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(
            reply.stanzaErrorCondition == condition && reply.pubsubErrorCondition == pubsub && reply.stanzaErrorText != nil,
            "\(reply.xmlString())", sourceLocation: sourceLocation)
    }

    @Test func eachAccessModelLetsInWhomItShould() async throws {
        try await TestServer.with(accounts: TestServer.threeAccounts) { server in
            let (alice, bob, carol) = try await Self.setUp(server)
            try await Self.publish(alice, "urn:example:presence", [:])
            try await Self.publish(alice, "urn:example:open", ["pubsub#access_model": "open"])
            try await Self.publish(alice, "urn:example:roster", ["pubsub#access_model": "roster", "pubsub#roster_groups_allowed": "Friends"])
            try await Self.publish(alice, "urn:example:closed", ["pubsub#access_model": "roster", "pubsub#roster_groups_allowed": "Family"])
            try await Self.publish(alice, "urn:example:whitelist", ["pubsub#access_model": "whitelist"])
            for node in ["presence", "open", "roster", "closed", "whitelist"] {
                #expect(try await alice.items(of: "alice@localhost", "urn:example:\(node)").pubsubItemIDs == ["i"], "the owner reads \(node)")
            }

            #expect(try await bob.items(of: "alice@localhost", "urn:example:presence").pubsubItemIDs == ["i"])
            Self.expectRefused(
                try await carol.items(of: "alice@localhost", "urn:example:presence"), .notAuthorized, "presence-subscription-required")
            // A missing node says no more to a stranger than an existing one.
            Self.expectRefused(
                try await carol.items(of: "alice@localhost", "urn:example:none"), .notAuthorized, "presence-subscription-required")

            #expect(try await carol.items(of: "alice@localhost", "urn:example:open").pubsubItemIDs == ["i"])
            #expect(try await bob.items(of: "alice@localhost", "urn:example:open").pubsubItemIDs == ["i"])

            #expect(try await bob.items(of: "alice@localhost", "urn:example:roster").pubsubItemIDs == ["i"])
            Self.expectRefused(try await carol.items(of: "alice@localhost", "urn:example:roster"), .notAuthorized, "not-in-roster-group")
            Self.expectRefused(try await bob.items(of: "alice@localhost", "urn:example:closed"), .notAuthorized, "not-in-roster-group")

            Self.expectRefused(try await bob.items(of: "alice@localhost", "urn:example:whitelist"), .notAllowed, "closed-node")
            Self.expectRefused(try await carol.items(of: "alice@localhost", "urn:example:whitelist"), .notAllowed, "closed-node")

            let byCarol = try await carol.exchange(
                "<iq type='set' id='p' to='alice@localhost'><pubsub xmlns='\(PEP.pubsub)'><publish node='urn:example:open'><item>\(PEP.nick("c"))</item></publish></pubsub></iq>",
                id: "p")
            #expect(byCarol.reply.stanzaErrorCondition == .forbidden, "only the owner publishes")
        }
    }

    @Test func aWhitelistNodeNotifiesOnlyTheOwner() async throws {
        try await TestServer.with { server in
            try await Subscribe.establish(server, "bob", to: "alice")
            let alice = try await server.im("alice", available: false)
            try await alice.availableWithCaps(server, as: "alice@localhost/r", notify: ["urn:xmpp:bookmarks:1"])
            let bob = try await server.im("bob", available: false)
            try await bob.availableWithCaps(server, as: "bob@localhost/r", notify: ["urn:xmpp:bookmarks:1"], queried: false)
            try await bob.sync()
            let bookmark = "<conference xmlns='urn:xmpp:bookmarks:1' name='Coven' autojoin='true'/>"
            let (reply, before) = try await alice.publish(
                "urn:xmpp:bookmarks:1", id: "coven@muc.localhost", bookmark,
                options: ["pubsub#access_model": "whitelist", "pubsub#max_items": "max", "pubsub#persist_items": "true"])
            #expect(reply.type == "result", "\(reply.xmlString())")
            #expect(before.compactMap { $0.pepEvent(node: "urn:xmpp:bookmarks:1") }.count == 1)
            #expect(try await bob.sync().compactMap { $0.pepEvent(node: "urn:xmpp:bookmarks:1") }.isEmpty)
            let form = PEPScenarios.fields(try await alice.owner("get", "<configure node='urn:xmpp:bookmarks:1'/>").reply)
            #expect(form["pubsub#access_model"] == ["whitelist"] && form["pubsub#max_items"] == ["max"])
        }
    }

    /// §7.1.5: publish-options create a node with them, and must match an existing node.
    @Test func publishOptionsArePreconditions() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            try await Self.publish(alice, PEP.nick, [:])
            let (refused, _) = try await alice.publish(PEP.nick, id: "j", PEP.nick("y"), options: ["pubsub#access_model": "open"])
            Self.expectRefused(refused, .conflict, "precondition-not-met")
            #expect(refused.stanzaErrorText?.contains("pubsub#access_model") == true)
            #expect(try await alice.items(of: "alice@localhost", PEP.nick).pubsubItemIDs == ["i"], "nothing was published")
            // Options the node already has are met, however they are spelled.
            let (met, _) = try await alice.publish(
                PEP.nick, id: "k", PEP.nick("z"), options: ["pubsub#access_model": "presence", "pubsub#persist_items": "1"])
            #expect(met.type == "result", "\(met.xmlString())")

            let (bad, _) = try await alice.publish("urn:example:n", id: "i", PEP.nick("x"), options: ["pubsub#access_model": "nobody"])
            #expect(bad.stanzaErrorCondition == .notAcceptable, "\(bad.xmlString())")
            #expect(try await alice.items(of: "alice@localhost", "urn:example:n").stanzaErrorCondition == .itemNotFound, "no node made")
        }
    }

    @Test func theAccountsDiscoShowsItsPEPServiceToContacts() async throws {
        try await TestServer.with(accounts: TestServer.threeAccounts) { server in
            let (alice, bob, carol) = try await Self.setUp(server)
            try await Self.publish(alice, PEP.nick, [:])
            try await Self.publish(alice, "urn:example:whitelist", ["pubsub#access_model": "whitelist"])
            let info = "<query xmlns='http://jabber.org/protocol/disco#info'/>"
            for client in [alice, bob] {
                let reply = try await client.exchange("<iq type='get' id='di' to='alice@localhost'>\(info)</iq>", id: "di").reply
                let query = try #require(reply.firstChild("query", namespace: XMLNamespace.discoInfo), "\(reply.xmlString())")
                let identities = query.children("identity", namespace: XMLNamespace.discoInfo).map { "\($0[attribute: "category"] ?? "")/\($0[attribute: "type"] ?? "")" }
                #expect(identities.contains("pubsub/pep") && identities.contains("account/registered"))
                let features = Set(query.children("feature", namespace: XMLNamespace.discoInfo).compactMap { $0[attribute: "var"] })
                for feature in ["publish", "publish-options", "auto-create", "auto-subscribe", "retract-items", "retrieve-items", "delete-nodes", "config-node",
                    "access-presence", "access-open", "access-roster", "access-whitelist", "persistent-items", "last-published",
                    "item-ids", "filtered-notifications", "multi-items", "purge-nodes"] {
                    #expect(features.contains("\(PEP.pubsub)#\(feature)"), "\(feature)")
                }
            }
            let stranger = try await carol.exchange("<iq type='get' id='di' to='alice@localhost'>\(info)</iq>", id: "di").reply
            #expect(stranger.stanzaErrorCondition == .serviceUnavailable)

            let items = "<query xmlns='http://jabber.org/protocol/disco#items'/>"
            func nodes(_ client: TestClient) async throws -> [String] {
                let reply = try await client.exchange("<iq type='get' id='dj' to='alice@localhost'>\(items)</iq>", id: "dj").reply
                return reply.firstChild("query", namespace: XMLNamespace.discoItems)?.children("item", namespace: XMLNamespace.discoItems)
                    .compactMap { $0[attribute: "node"] }.sorted() ?? []
            }
            #expect(try await nodes(alice) == [PEP.nick, "urn:example:whitelist"])
            #expect(try await nodes(bob) == [PEP.nick], "a node bob may not read is not listed to him")
            // XEP-0030 §8: to a stranger an empty list, as for an account that does not exist;
            // a node of it is service-unavailable, as the account is (to bob: no such node).
            for account in ["alice@localhost", "nobody@localhost"] {
                let listed = try await carol.exchange("<iq type='get' id='dj' to='\(account)'>\(items)</iq>", id: "dj").reply
                #expect(listed.type == "result" && listed.firstChild("query")?.elements.isEmpty == true, "\(listed.xmlString())")
                let nodeItems = "<query xmlns='http://jabber.org/protocol/disco#items' node='\(PEP.nick)'/>"
                let node = try await carol.exchange("<iq type='get' id='dn' to='\(account)'>\(nodeItems)</iq>", id: "dn").reply
                #expect(node.type == "result" && node.firstChild("query")?[attribute: "node"] == PEP.nick, "\(node.xmlString())")
                #expect(node.firstChild("query")?.elements.isEmpty == true, "\(node.xmlString())")
                let nodeInfo = "<query xmlns='http://jabber.org/protocol/disco#info' node='x'/>"
                let hidden = try await carol.exchange("<iq type='get' id='dk' to='\(account)'>\(nodeInfo)</iq>", id: "dk").reply
                #expect(hidden.stanzaErrorCondition == .serviceUnavailable, "\(hidden.xmlString())")
            }
            // XEP-0060 §5.3: a node one may read is a leaf, with its metadata; one missing, or
            // one the requester may not read, is item-not-found.
            func nodeInfo(_ client: TestClient, _ node: String) async throws -> XMLElement {
                let query = "<query xmlns='http://jabber.org/protocol/disco#info' node='\(node)'/>"
                let reply = try await client.exchange("<iq type='get' id='dk' to='alice@localhost'>\(query)</iq>", id: "dk").reply
                try SchemaValidator.shared.validate(reply.xmlString())
                return reply
            }
            for (client, node) in [(bob, PEP.nick), (alice, PEP.nick), (alice, "urn:example:whitelist")] {
                let reply = try await nodeInfo(client, node)
                let query = reply.firstChild("query", namespace: XMLNamespace.discoInfo)
                #expect(reply.type == "result" && query?[attribute: "node"] == node, "\(reply.xmlString())")
                let identity = query?.firstChild("identity", namespace: XMLNamespace.discoInfo)
                #expect(identity?[attribute: "category"] == "pubsub" && identity?[attribute: "type"] == "leaf", "\(reply.xmlString())")
                let form = query?.firstChild("x", namespace: XMLNamespace.dataForms)?.formValues
                #expect(form?["FORM_TYPE"] == "\(PEP.pubsub)#meta-data" && form?["pubsub#owner"] == "alice@localhost", "\(reply.xmlString())")
            }
            for (client, node) in [(bob, "urn:example:whitelist"), (bob, "urn:example:none"), (alice, "urn:example:none")] {
                #expect(try await nodeInfo(client, node).stanzaErrorCondition == .itemNotFound, "\(node)")
            }
        }
    }

    @Test func turnedOffPEPIsServiceUnavailable() async throws {
        try await TestServer.with({ $0.pep.enabled = false }) { server in
            let alice = try await server.login("alice")
            let (reply, _) = try await alice.publish(PEP.nick, id: "i", PEP.nick("x"))
            #expect(reply.stanzaErrorCondition == .serviceUnavailable)
            let info = try await alice.exchange("<iq type='get' id='di'><query xmlns='http://jabber.org/protocol/disco#info'/></iq>", id: "di").reply
            let identities = info.firstChild("query", namespace: XMLNamespace.discoInfo)?.children("identity", namespace: XMLNamespace.discoInfo)
            #expect(identities?.contains { $0[attribute: "category"] == "pubsub" } == false)
        }
    }

    @Test func subscriptionsAndAffiliationsGetMinimalAnswers() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            try await Self.publish(alice, PEP.nick, [:])
            let subscriptions = try await alice.exchange(
                "<iq type='get' id='s'><pubsub xmlns='\(PEP.pubsub)'><subscriptions/></pubsub></iq>", id: "s").reply
            #expect(subscriptions.type == "result" && subscriptions.firstChild("pubsub", namespace: PEP.pubsub)?.firstChild("subscriptions", namespace: PEP.pubsub) != nil)
            let affiliations = try await alice.exchange(
                "<iq type='get' id='a'><pubsub xmlns='\(PEP.pubsub)'><affiliations/></pubsub></iq>", id: "a").reply
            let affiliation = affiliations.firstChild("pubsub", namespace: PEP.pubsub)?.firstChild("affiliations", namespace: PEP.pubsub)?
                .firstChild("affiliation", namespace: PEP.pubsub)
            #expect(affiliation?[attribute: "node"] == PEP.nick && affiliation?[attribute: "affiliation"] == "owner")
            let subscribe = try await alice.exchange(
                "<iq type='set' id='sb'><pubsub xmlns='\(PEP.pubsub)'><subscribe node='\(PEP.nick)' jid='alice@localhost'/></pubsub></iq>", id: "sb").reply
            #expect(subscribe.stanzaErrorCondition == .featureNotImplemented && subscribe.pubsubErrorCondition == "unsupported")
        }
    }
}
