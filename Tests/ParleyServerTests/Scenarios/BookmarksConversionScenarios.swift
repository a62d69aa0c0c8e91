import ParleyCore
import ParleyTestSupport
import Testing

@testable import ParleyServer

/// XEP-0411 / XEP-0402 §5.3 on the wire: bookmarks written to private storage (XEP-0048)
/// appear as PEP items of `urn:xmpp:bookmarks:1` and those published there appear in private
/// storage, additions and removals both ways, each published once.
@Suite struct BookmarksConversionScenarios {
    static let node = "urn:xmpp:bookmarks:1"
    static let legacy = "storage:bookmarks"
    static let options = [
        "pubsub#access_model": "whitelist", "pubsub#max_items": "max", "pubsub#persist_items": "true",
        "pubsub#send_last_published_item": "never",
    ]

    static func privateBookmarks(_ client: TestClient) async throws -> [Bookmark] {
        let reply = try await PrivateStorageScenarios.request(
            client, "get", "<storage xmlns='\(legacy)'/>", id: "pg-\(UInt32.random(in: 0 ... .max))")
        let storage = try #require(try PrivateStorageScenarios.stored(reply).first)
        return Bookmark.list(inLegacy: storage)
    }

    static func pepItems(_ client: TestClient) async throws -> [String: XMLElement] {
        let reply = try await client.items(of: "alice@localhost", node)
        guard reply.type == "result" else { return [:] }
        try SchemaValidator.shared.validate(try #require(reply.firstChild("pubsub", namespace: PEP.pubsub)).xmlString())
        let items = reply.firstChild("pubsub", namespace: PEP.pubsub)?.firstChild("items", namespace: PEP.pubsub)?
            .children("item", namespace: PEP.pubsub) ?? []
        var result: [String: XMLElement] = [:]
        for item in items { result[item[attribute: "id"] ?? ""] = item.firstChild("conference", namespace: node) }
        return result
    }

    static func notifications(_ elements: [XMLElement]) -> [XMLElement] {
        elements.compactMap { $0.pepEvent(node: node) }
    }

    @Test func privateBookmarksBecomePEPItemsAndRemovalsFollow() async throws {
        try await TestServer.with(accounts: TestServer.threeAccounts) { server in
            try await Subscribe.establish(server, "bob", to: "alice")
            let watcher = try await server.im("alice", "watcher", available: false)
            try await watcher.availableWithCaps(server, as: "alice@localhost/watcher", notify: [Self.node])
            let alice = try await server.login("alice")
            let storage = "<storage xmlns='storage:bookmarks'>"
                + "<conference jid='tea@conference.localhost' autojoin='1' name='Tea party'><nick>alice</nick><password>s3cret</password>"
                + "<state xmlns='urn:example:client'>pinned</state></conference>"
                + "<conference jid='chess@conference.localhost'/><url url='https://example.org/' name='Site'/></storage>"
            #expect(try await PrivateStorageScenarios.request(alice, "set", storage).type == "result")

            // Converted before the reply (as Prosody does): a client reading PEP next finds them.
            let items = try await Self.pepItems(alice)
            #expect(items.count == 2, "\(items)")
            let tea = try #require(items["tea@conference.localhost"])
            #expect(tea[attribute: "name"] == "Tea party" && tea[attribute: "autojoin"] == "true")
            #expect(tea.firstChild("nick", namespace: Self.node)?.text == "alice")
            #expect(tea.firstChild("password", namespace: Self.node)?.text == "s3cret")
            #expect(tea.firstChild("extensions", namespace: Self.node)?.firstChild("state", namespace: "urn:example:client")?.text == "pinned")
            let chess = try #require(items["chess@conference.localhost"])
            #expect(chess.attributes.isEmpty && chess.elements.isEmpty, "\(chess.xmlString())")
            // Private, like the storage it mirrors: not even a contact with a subscription reads it.
            let bob = try await server.login("bob")
            let refused = try await bob.items(of: "alice@localhost", Self.node)
            #expect(refused.type == "error", "\(refused.xmlString())")

            let published = Self.notifications(try await AvatarConversionScenarios.settle(watcher))
            #expect(published.count == 2, "one notification per room, no echo: \(published.map { $0.xmlString() })")
            for message in published { #expect(message.firstChild("item", namespace: PEP.event) != nil) }
            // The storage as written is what a legacy client reads back.
            #expect(try await Self.privateBookmarks(alice).map(\.jid) == ["tea@conference.localhost", "chess@conference.localhost"])

            // Removing a room from the private list retracts its item.
            let fewer = "<storage xmlns='storage:bookmarks'><conference jid='chess@conference.localhost'/></storage>"
            #expect(try await PrivateStorageScenarios.request(alice, "set", fewer, id: "p2").type == "result")
            #expect(try await Self.pepItems(alice).keys.sorted() == ["chess@conference.localhost"])
            let retracted = Self.notifications(try await AvatarConversionScenarios.settle(watcher))
            #expect(retracted.count == 1, "\(retracted.map { $0.xmlString() })")
            #expect(retracted.first?.firstChild("retract", namespace: PEP.event)?[attribute: "id"] == "tea@conference.localhost")

            // Clearing the storage empties the node.
            #expect(try await PrivateStorageScenarios.request(alice, "set", "<storage xmlns='storage:bookmarks'/>", id: "p3").type == "result")
            #expect(try await Self.pepItems(alice).isEmpty)
        }
    }

    @Test func pepBookmarksReachPrivateStorageAndRemovalsFollow() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            // A URL bookmark has no XEP-0402 form: it must survive the conversion.
            let url = "<storage xmlns='storage:bookmarks'><url url='https://example.org/' name='Site'/></storage>"
            #expect(try await PrivateStorageScenarios.request(alice, "set", url).type == "result")

            let conference = "<conference xmlns='\(Self.node)' name='Coven' autojoin='true'><nick>al</nick>"
                + "<extensions><state xmlns='urn:example:client'>muted</state></extensions></conference>"
            let (reply, _) = try await alice.publish(Self.node, id: "coven@conference.localhost", conference, options: Self.options)
            #expect(reply.type == "result", "\(reply.xmlString())")
            try await AvatarConversionScenarios.eventually("the room in private storage") { try await !Self.privateBookmarks(alice).isEmpty }
            let stored = try await PrivateStorageScenarios.request(alice, "get", "<storage xmlns='storage:bookmarks'/>", id: "pg")
            let storage = try #require(try PrivateStorageScenarios.stored(stored).first)
            let room = try #require(storage.firstChild("conference", namespace: Self.legacy))
            #expect(room[attribute: "jid"] == "coven@conference.localhost" && room[attribute: "name"] == "Coven")
            #expect(room[attribute: "autojoin"] == "true" && room.firstChild("nick", namespace: Self.legacy)?.text == "al")
            #expect(room.firstChild("state", namespace: "urn:example:client")?.text == "muted")
            #expect(storage.firstChild("url", namespace: Self.legacy)?[attribute: "url"] == "https://example.org/", "\(storage.xmlString())")
            // Only the client's item is in PEP: the mirror did not publish it again.
            #expect(try await Self.pepItems(alice).count == 1)

            let retract = "<iq type='set' id='r1'><pubsub xmlns='\(PEP.pubsub)'><retract node='\(Self.node)' notify='true'>"
                + "<item id='coven@conference.localhost'/></retract></pubsub></iq>"
            #expect(try await alice.exchange(retract, id: "r1").reply.type == "result")
            try await AvatarConversionScenarios.eventually("the room leaves private storage") { try await Self.privateBookmarks(alice).isEmpty }
            let left = try #require(try PrivateStorageScenarios.stored(
                try await PrivateStorageScenarios.request(alice, "get", "<storage xmlns='storage:bookmarks'/>", id: "pg2")).first)
            #expect(left.firstChild("url", namespace: Self.legacy) != nil, "\(left.xmlString())")
        }
    }

    @Test func legacyPEPBookmarksJoinTheOtherViews() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            let storage = "<storage xmlns='storage:bookmarks'><conference jid='old@conference.localhost' name='Old' autojoin='true'/></storage>"
            let (reply, _) = try await alice.publish(
                Self.legacy, id: "current", storage, options: ["pubsub#access_model": "whitelist", "pubsub#persist_items": "true"])
            #expect(reply.type == "result", "\(reply.xmlString())")
            try await AvatarConversionScenarios.eventually("the room in private storage and in XEP-0402") {
                let inPrivate = try await Self.privateBookmarks(alice).map(\.jid)
                let inPEP = try await Self.pepItems(alice).keys.sorted()
                return inPrivate == ["old@conference.localhost"] && inPEP == ["old@conference.localhost"]
            }

            // A change through private storage reaches the legacy node's item too.
            let newer = "<storage xmlns='storage:bookmarks'><conference jid='new@conference.localhost'/></storage>"
            #expect(try await PrivateStorageScenarios.request(alice, "set", newer).type == "result")
            let legacy = try await alice.items(of: "alice@localhost", Self.legacy)
            let item = legacy.firstChild("pubsub", namespace: PEP.pubsub)?.firstChild("items", namespace: PEP.pubsub)?
                .children("item", namespace: PEP.pubsub).last
            let rooms = item?.firstChild("storage", namespace: Self.legacy)?.children("conference", namespace: Self.legacy)
                .compactMap { $0[attribute: "jid"] }
            #expect(rooms == ["new@conference.localhost"], "\(legacy.xmlString())")
            #expect(try await Self.pepItems(alice).keys.sorted() == ["new@conference.localhost"])
        }
    }
}
