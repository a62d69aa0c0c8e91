import ParleyCore
import Testing

/// Room avatars (XEP-0486): vcard-temp on the room JID, set by owners only, read by anyone
/// who may see the room; its XEP-0153 photo hash in the room's presence and disco#info; kept
/// by a persistent room across a restart, gone with the room.
@Suite struct MUCAvatarScenarios {
    static let room = "team@conference.localhost"
    static let vCardNamespace = "vcard-temp"
    static let update = "vcard-temp:x:update"
    /// "first avatar image bytes" and "second avatar image bytes", and their SHA-1.
    static let first = (base64: "Zmlyc3QgYXZhdGFyIGltYWdlIGJ5dGVz", hash: "b5e2cac7f213fe2f9c04aab801e10bf8cc3472b2")
    static let second = (base64: "c2Vjb25kIGF2YXRhciBpbWFnZSBieXRlcw==", hash: "a0fbf0933d19d08acdc1d7dd67be222697083d16")

    static func setVCard(_ client: TestClient, _ vCard: String, id: String = "v") async throws -> XMLElement {
        try await client.query("<iq type='set' id='\(id)' to='\(room)'>\(vCard)</iq>", id: id)
    }

    static func vCard(photo base64: String) -> String {
        "<vCard xmlns='vcard-temp'><FN>Team room</FN><PHOTO><TYPE>image/png</TYPE><BINVAL>\(base64)</BINVAL></PHOTO></vCard>"
    }

    /// Presence from the room's bare JID with the photo hash; the text of `<photo/>`.
    static func photo(of presence: XMLElement) -> String? {
        guard presence.name == "presence", presence.from == room else { return nil }
        return presence.firstChild("x", namespace: update)?.firstChild("photo", namespace: update)?.text
    }

    static func info(_ client: TestClient) async throws -> XMLElement {
        let reply = try await client.query(
            "<iq type='get' id='di' to='\(room)'><query xmlns='http://jabber.org/protocol/disco#info'/></iq>", id: "di")
        return try #require(reply.firstChild("query", namespace: XMLNamespace.discoInfo), "\(reply.xmlString())")
    }

    static func avatarHashes(_ info: XMLElement) -> [String]? {
        info.firstChild("x", namespace: XMLNamespace.dataForms)?.children("field", namespace: XMLNamespace.dataForms)
            .first { $0[attribute: "var"] == "muc#roominfo_avatarhash" }?
            .children("value", namespace: XMLNamespace.dataForms).map(\.text)
    }

    @Test func anOwnerSetsTheAvatarOccupantsSeeItsHashAndOthersMayNotChangeIt() async throws {
        try await MUC.with { server in
            let alice = try await server.im("alice")
            let bob = try await server.im("bob")
            try await MUC.createInstantRoom(alice, "team", nick: "Alice")
            _ = try await bob.enter("team", nick: "Bob")
            try await alice.expectRoomPresence("team", "Bob")

            // No vCard yet: an empty one (XEP-0054 allows either that or item-not-found).
            let none = try await bob.query("<iq type='get' id='g0' to='\(Self.room)'><vCard xmlns='vcard-temp'/></iq>", id: "g0")
            let empty = none.firstChild("vCard", namespace: "vcard-temp")
            #expect(none.type == "result" && empty != nil && empty?.elements.isEmpty == true, "\(none.xmlString())")
            let info = try await Self.info(bob)
            #expect(info.children("feature").contains { $0[attribute: "var"] == Self.vCardNamespace })
            #expect(Self.avatarHashes(info) == [], "no avatar: the field without a value")

            let forbidden = try await Self.setVCard(bob, Self.vCard(photo: Self.first.base64), id: "b")
            #expect(forbidden.stanzaErrorCondition == .forbidden, "\(forbidden.xmlString())")
            let notBase64 = try await Self.setVCard(alice, Self.vCard(photo: "***"), id: "n")
            #expect(notBase64.stanzaErrorCondition == .badRequest, "\(notBase64.xmlString())")
            try await bob.expectNothingPending("a refused vCard announces nothing")

            let set = try await Self.setVCard(alice, Self.vCard(photo: Self.first.base64))
            #expect(set.type == "result", "\(set.xmlString())")
            for client in [alice, bob] {
                let presence = try await client.expect("presence")
                #expect(Self.photo(of: presence) == Self.first.hash, "\(presence.xmlString())")
                let notice = try await client.expect("message")
                #expect(notice.from == Self.room && notice.statusCodes == [104], "\(notice.xmlString())")
            }
            let got = try await bob.query("<iq type='get' id='g1' to='\(Self.room)'><vCard xmlns='vcard-temp'/></iq>", id: "g1")
            let card = got.firstChild("vCard", namespace: Self.vCardNamespace)
            #expect(card?.firstChild("PHOTO", namespace: Self.vCardNamespace)?.firstChild("BINVAL", namespace: Self.vCardNamespace)?.text == Self.first.base64)
            #expect(card?.firstChild("FN", namespace: Self.vCardNamespace)?.text == "Team room", "\(got.xmlString())")
            #expect(Self.avatarHashes(try await Self.info(bob)) == [Self.first.hash])

            // A newcomer gets the room's avatar presence after the subject.
            let carol = try await server.im("carol")
            let entry = try await carol.enter("team", nick: "Carol")
            #expect(entry.others.allSatisfy { Self.photo(of: $0) == nil })
            let avatar = try await carol.expect("presence")
            #expect(Self.photo(of: avatar) == Self.first.hash && avatar.to == "carol@localhost/r", "\(avatar.xmlString())")
            try await alice.expectRoomPresence("team", "Carol")
            try await bob.expectRoomPresence("team", "Carol")

            // Removing it (an empty vCard): an empty <photo/>, and newcomers get nothing.
            #expect(try await Self.setVCard(alice, "<vCard xmlns='vcard-temp'/>", id: "e").type == "result")
            for client in [alice, bob, carol] {
                #expect(Self.photo(of: try await client.expect("presence")) == "")
                #expect(try await client.expect("message").statusCodes == [104])
            }
            let phone = try await server.im("carol", "phone", available: false)
            _ = try await phone.enter("team", nick: "Carol")
            try await phone.expectNothingPending("no avatar, no avatar presence")
            // And the vCard reads back as set: empty.
            let unset = try await phone.query("<iq type='get' id='g1' to='\(Self.room)'><vCard xmlns='vcard-temp'/></iq>", id: "g1")
            #expect(unset.type == "result" && unset.firstChild("vCard", namespace: "vcard-temp")?.elements.isEmpty == true, "\(unset.xmlString())")
        }
    }

    @Test func aPersistentRoomKeepsItsAvatarAcrossARestartUntilDestroyed() async throws {
        try await MUC.with({ $0.maxVCardBytes = 600 }) { server in
            let alice = try await server.im("alice")
            _ = try await alice.enter("team", nick: "Alice")
            try await MUC.configure(alice, "team", "<field var='muc#roomconfig_persistentroom'><value>1</value></field>")
            let large = "<vCard xmlns='vcard-temp'><DESC>\(String(repeating: "x", count: 700))</DESC></vCard>"
            #expect(try await Self.setVCard(alice, large, id: "big").stanzaErrorCondition == .notAcceptable)
            #expect(try await Self.setVCard(alice, Self.vCard(photo: Self.second.base64)).type == "result")
            #expect(Self.photo(of: try await alice.expect("presence")) == Self.second.hash)
            #expect(try await alice.expect("message").statusCodes == [104])
            await alice.close()

            try await server.restart()
            let bob = try await server.im("bob")
            let entry = try await bob.enter("team", nick: "Bob")
            #expect(entry.own.statusCodes == [110])
            #expect(Self.photo(of: try await bob.expect("presence")) == Self.second.hash)
            #expect(Self.avatarHashes(try await Self.info(bob)) == [Self.second.hash])
            let got = try await bob.query("<iq type='get' id='g' to='\(Self.room)'><vCard xmlns='vcard-temp'/></iq>", id: "g")
            #expect(got.firstChild("vCard", namespace: Self.vCardNamespace) != nil, "\(got.xmlString())")

            let owner = try await server.im("alice")
            _ = try await owner.enter("team", nick: "Alice")
            _ = try await owner.expect("presence")
            try await bob.expectRoomPresence("team", "Alice")
            try await owner.send("<iq type='set' id='d' to='\(Self.room)'><query xmlns='\(MUC.owner)'><destroy/></query></iq>")
            try await owner.expectRoomPresence("team", "Alice", type: "unavailable", codes: [110])
            #expect(try await owner.expect("iq").type == "result")
            try await bob.expectRoomPresence("team", "Bob", type: "unavailable", codes: [110])
            try await server.restart()
            let carol = try await server.im("carol")
            try await MUC.createInstantRoom(carol, "team", nick: "Carol")
            let gone = try await carol.query("<iq type='get' id='g2' to='\(Self.room)'><vCard xmlns='vcard-temp'/></iq>", id: "g2")
            let vCard = gone.firstChild("vCard", namespace: "vcard-temp")
            #expect(gone.type == "result" && vCard?.elements.isEmpty == true, "a destroyed room's vCard does not come back: \(gone.xmlString())")
        }
    }
}
