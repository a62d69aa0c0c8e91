import Foundation
import ParleyCore
import ParleyTestSupport
import Testing

@testable import ParleyServer

/// XEP-0398 on the wire: a vCard photo and nickname reach PEP (XEP-0084, XEP-0172) and PEP's
/// reach the vCard, each change notified once (the mirror does not echo its own writes), and
/// available presence carries the avatar's hash (XEP-0153) for old clients.
@Suite struct AvatarConversionScenarios {
    static let data = "urn:xmpp:avatar:data"
    static let metadata = "urn:xmpp:avatar:metadata"
    static let update = "vcard-temp:x:update"
    /// SHA-1 of "abc" (base64 YWJj), and of "xyz" (base64 eHl6).
    static let abcHash = "a9993e364706816aba3e25717850c26c9cd0d89d"
    static let xyzHash = "66b27417d37e024c46526c2f6d358a754fc552f3"

    /// Bob, subscribed to alice's presence, available with +notify for the avatar and nick
    /// nodes; alice available without caps.
    static func setUp(_ server: TestServer) async throws -> (alice: TestClient, bob: TestClient) {
        try await Subscribe.establish(server, "bob", to: "alice")
        let alice = try await server.im("alice")
        let bob = try await server.im("bob", available: false)
        try await bob.availableWithCaps(server, as: "bob@localhost/r", notify: [metadata, PEP.nick])
        try await alice.sync()
        try await bob.sync()
        return (alice, bob)
    }

    /// Everything that arrives within a moment, after a round trip: the mirror works behind
    /// the reply, so one round trip is not enough to see what it did, or did not, send.
    static func settle(_ client: TestClient) async throws -> [XMLElement] {
        var seen = try await client.sync()
        try await Task.sleep(for: .milliseconds(300))
        seen += try await client.sync()
        return seen
    }

    static func eventually(
        _ what: String, sourceLocation: SourceLocation = #_sourceLocation, _ condition: () async throws -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + TestClient.defaultTimeout
        while try await !condition() {
            guard ContinuousClock.now < deadline else { throw ScenarioFailure("never: \(what)") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    static func vCardPhoto(_ client: TestClient, of jid: String) async throws -> (type: String?, binval: String?) {
        let reply = try await VCardScenarios.get(client, to: jid, id: "vg-\(UInt32.random(in: 0 ... .max))")
        let photo = reply.firstChild("vCard", namespace: "vcard-temp")?.firstChild("PHOTO", namespace: "vcard-temp")
        return (photo?.firstChild("TYPE", namespace: "vcard-temp")?.text, photo?.firstChild("BINVAL", namespace: "vcard-temp")?.text)
    }

    @Test func aVCardPhotoIsPublishedAsAnAvatarOnceAndItsDataMatchesItsHash() async throws {
        try await TestServer.with(accounts: TestServer.threeAccounts) { server in
            let (alice, bob) = try await Self.setUp(server)
            #expect(try await VCardScenarios.set(alice, VCardScenarios.vCard).type == "result")

            var seen: [XMLElement] = []
            try await Self.eventually("bob is told of alice's avatar") {
                seen += try await bob.sync()
                return seen.contains { $0.pepEvent(node: Self.metadata) != nil }
            }
            seen += try await Self.settle(bob)
            let notifications = seen.filter { $0.pepEvent(node: Self.metadata) != nil }
            #expect(notifications.count == 1, "exactly one: \(notifications.map { $0.xmlString() })")
            let message = try #require(notifications.first)
            try SchemaValidator.shared.validate(message.xmlString())
            #expect(message.from == "alice@localhost")
            let item = try #require(message.pepEvent(node: Self.metadata)?.firstChild("item", namespace: PEP.event))
            #expect(item[attribute: "id"] == Self.abcHash)
            let info = try #require(item.firstChild("metadata", namespace: Self.metadata)?.firstChild("info", namespace: Self.metadata))
            #expect(info[attribute: "id"] == Self.abcHash && info[attribute: "bytes"] == "3" && info[attribute: "type"] == "image/png")

            let items = try await bob.items(of: "alice@localhost", Self.data, attributes: "", "<item id='\(Self.abcHash)'/>")
            #expect(items.type == "result", "\(items.xmlString())")
            try SchemaValidator.shared.validate(try #require(items.firstChild("pubsub", namespace: PEP.pubsub)).xmlString())
            let base64 = try #require(
                items.firstChild("pubsub", namespace: PEP.pubsub)?.firstChild("items", namespace: PEP.pubsub)?
                    .firstChild("item", namespace: PEP.pubsub)?.firstChild("data", namespace: Self.data)?.text)
            let digest = try HashFunction.sha1.digest(try Base64.decode(base64))
            #expect(digest.map { String(format: "%02x", $0) }.joined() == Self.abcHash)
            // The nickname went along, once.
            let nicks = seen.filter { $0.pepEvent(node: PEP.nick) != nil }
            #expect(nicks.count == 1, "\(nicks.map { $0.xmlString() })")
            #expect(nicks.first?.pepEvent(node: PEP.nick)?.firstChild("item", namespace: PEP.event)?
                .firstChild("nick", namespace: PEP.nick)?.text == "alice")

            // The same vCard again changes nothing in PEP, so nobody is told anything.
            #expect(try await VCardScenarios.set(alice, VCardScenarios.vCard, id: "again").type == "result")
            let repeated = try await Self.settle(bob).filter { $0.pepEvent(node: Self.metadata) != nil || $0.pepEvent(node: PEP.nick) != nil }
            #expect(repeated.isEmpty, "\(repeated.map { $0.xmlString() })")

            // A vCard without a photo disables the avatar (XEP-0084 §4.5: empty metadata).
            #expect(try await VCardScenarios.set(alice, "<vCard xmlns='vcard-temp'><FN>Alice</FN></vCard>", id: "v2").type == "result")
            var disabled: [XMLElement] = []
            try await Self.eventually("bob is told the avatar is gone") {
                disabled += try await bob.sync().filter { $0.pepEvent(node: Self.metadata) != nil }
                return !disabled.isEmpty
            }
            disabled += try await Self.settle(bob).filter { $0.pepEvent(node: Self.metadata) != nil }
            #expect(disabled.count == 1, "\(disabled.map { $0.xmlString() })")
            let empty = try #require(disabled.first?.pepEvent(node: Self.metadata)?.firstChild("item", namespace: PEP.event)?
                .firstChild("metadata", namespace: Self.metadata))
            #expect(empty.elements.isEmpty)
        }
    }

    @Test func aPEPAvatarBecomesTheVCardPhotoAndThePresenceHash() async throws {
        try await TestServer.with(accounts: TestServer.threeAccounts) { server in
            let (alice, bob) = try await Self.setUp(server)
            let carol = try await server.login("carol")
            #expect(try await VCardScenarios.set(alice, "<vCard xmlns='vcard-temp'><FN>Alice Liddell</FN></vCard>").type == "result")
            _ = try await Self.settle(bob)

            #expect(try await alice.publish(Self.data, id: Self.xyzHash, "<data xmlns='\(Self.data)'>eHl6</data>").reply.type == "result")
            let meta = "<metadata xmlns='\(Self.metadata)'><info id='\(Self.xyzHash)' bytes='3' type='image/jpeg'/></metadata>"
            #expect(try await alice.publish(Self.metadata, id: Self.xyzHash, meta).reply.type == "result")

            try await Self.eventually("carol sees the photo in alice's vCard") {
                try await Self.vCardPhoto(carol, of: "alice@localhost").binval == "eHl6"
            }
            #expect(try await Self.vCardPhoto(carol, of: "alice@localhost").type == "image/jpeg")
            let vCard = try await VCardScenarios.get(carol, to: "alice@localhost", id: "vfull")
            #expect(vCard.firstChild("vCard", namespace: "vcard-temp")?.firstChild("FN", namespace: "vcard-temp")?.text == "Alice Liddell",
                "the rest of the vCard is kept")

            // No echo: bob heard of the avatar exactly once, from alice's own publish.
            let heard = try await Self.settle(bob).filter { $0.pepEvent(node: Self.metadata) != nil }
            #expect(heard.count == 1, "\(heard.map { $0.xmlString() })")

            // XEP-0398 §4: alice's client says nothing of the photo; the server does.
            try await alice.send("<presence><show>away</show></presence>")
            let presence = try await bob.expectPresence(from: "alice@localhost/r")
            try SchemaValidator.shared.validate(presence.xmlString())
            #expect(presence.firstChild("x", namespace: Self.update)?.firstChild("photo", namespace: Self.update)?.text == Self.xyzHash,
                "\(presence.xmlString())")
            #expect(presence.children("x", namespace: Self.update).count == 1)
            _ = try await alice.sync()

            // An <x/> without a photo gets one; a photo the client gave is left alone.
            try await alice.send("<presence><x xmlns='\(Self.update)'/></presence>")
            let completed = try await bob.expectPresence(from: "alice@localhost/r")
            #expect(completed.firstChild("x", namespace: Self.update)?.firstChild("photo", namespace: Self.update)?.text == Self.xyzHash)
            try await alice.send("<presence><x xmlns='\(Self.update)'><photo/></x></presence>")
            let own = try await bob.expectPresence(from: "alice@localhost/r")
            #expect(own.firstChild("x", namespace: Self.update)?.firstChild("photo", namespace: Self.update)?.text == "")
        }
    }

    @Test func metadataAnnouncedBeforeItsDataReachesTheVCardOnceTheDataArrives() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            let reader = try await server.login("alice", resource: "reader")
            let meta = "<metadata xmlns='\(Self.metadata)'><info id='\(Self.abcHash)' bytes='3' type='image/png'/></metadata>"
            #expect(try await alice.publish(Self.metadata, id: Self.abcHash, meta).reply.type == "result")
            try await Task.sleep(for: .milliseconds(200))
            #expect(try await Self.vCardPhoto(reader, of: "alice@localhost").binval == nil, "no bytes yet, no photo")
            #expect(try await alice.publish(Self.data, id: Self.abcHash, "<data xmlns='\(Self.data)'>YWJj</data>").reply.type == "result")
            try await Self.eventually("the photo arrives with its data") {
                try await Self.vCardPhoto(reader, of: "alice@localhost").binval == "YWJj"
            }
            #expect(try await server.running.storage.vCard(of: "alice")?.photoHash == Self.abcHash)
        }
    }

    @Test func theNickGoesBothWaysOnce() async throws {
        try await TestServer.with(accounts: TestServer.threeAccounts) { server in
            let (alice, bob) = try await Self.setUp(server)
            #expect(try await VCardScenarios.set(alice, "<vCard xmlns='vcard-temp'><FN>A</FN><NICKNAME>Ally</NICKNAME></vCard>").type == "result")
            var nicks: [XMLElement] = []
            try await Self.eventually("bob is told alice's nick") {
                nicks += try await bob.sync().filter { $0.pepEvent(node: PEP.nick) != nil }
                return !nicks.isEmpty
            }
            nicks += try await Self.settle(bob).filter { $0.pepEvent(node: PEP.nick) != nil }
            #expect(nicks.count == 1, "\(nicks.map { $0.xmlString() })")
            try SchemaValidator.shared.validate(try #require(nicks.first).xmlString())
            #expect(nicks.first?.pepEvent(node: PEP.nick)?.firstChild("item", namespace: PEP.event)?
                .firstChild("nick", namespace: PEP.nick)?.text == "Ally")
            #expect(try await Self.settle(bob).filter { $0.pepEvent(node: Self.metadata) != nil }.isEmpty, "no photo, no avatar news")

            let carol = try await server.login("carol")
            #expect(try await alice.publish(PEP.nick, id: "current", PEP.nick("Alicia")).reply.type == "result")
            try await Self.eventually("the vCard shows the new nick") {
                let reply = try await VCardScenarios.get(carol, to: "alice@localhost", id: "vn-\(UInt32.random(in: 0 ... .max))")
                return reply.firstChild("vCard", namespace: "vcard-temp")?.firstChild("NICKNAME", namespace: "vcard-temp")?.text == "Alicia"
            }
            let after = try await Self.settle(bob).filter { $0.pepEvent(node: PEP.nick) != nil }
            #expect(after.count == 1, "alice's publish, and no echo: \(after.map { $0.xmlString() })")
        }
    }

    @Test func theAccountAdvertisesTheConversions() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            let info = try await alice.query(
                "<iq type='get' id='d1' to='alice@localhost'><query xmlns='\(ServerQueryScenarios.discoInfo)'/></iq>", id: "d1")
            let features = Set(
                info.firstChild("query", namespace: ServerQueryScenarios.discoInfo)?
                    .children("feature", namespace: ServerQueryScenarios.discoInfo).compactMap { $0[attribute: "var"] } ?? [])
            #expect(features.isSuperset(of: ["urn:xmpp:pep-vcard-conversion:0", "urn:xmpp:bookmarks:1#compat"]), "\(features)")
        }
    }
}
