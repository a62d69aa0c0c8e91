import ParleyCore
import Testing

/// Private messages between occupants (XEP-0045 §7.5) as part of the accounts'
/// conversations: XEP-0280 §6's MUC rules for carbons (only the sender's devices under the
/// same nickname get a copy; what the room delivers is not copied) and the accounts'
/// XEP-0313 archives, which keep them with the room as the peer, as Prosody's mod_mam does.
@Suite struct MUCPrivateMessageScenarios {
    static let room = MUCScenarios.room
    static let carbons = "urn:xmpp:carbons:2"
    static let sid = "urn:xmpp:sid:0"

    /// Another session of `username` with carbons on, not available (so no presence
    /// between the account's resources gets in the way).
    private func device(_ server: TestServer, _ username: String, _ resource: String) async throws -> TestClient {
        let client = try await server.im(username, resource, available: false)
        let reply = try await client.query("<iq type='set' id='c'><enable xmlns='\(Self.carbons)'/></iq>", id: "c")
        #expect(reply.type == "result")
        return client
    }

    private func stanzaID(_ message: XMLElement, by archive: String) -> String? {
        message.children("stanza-id", namespace: Self.sid).first { $0[attribute: "by"] == archive }?[attribute: "id"]
    }

    /// The account's own archive, all of it (the results' forwarded messages and ids).
    private func archive(_ client: TestClient, with: String? = nil) async throws -> [(id: String, message: XMLElement)] {
        let form =
            with.map {
                "<x xmlns='jabber:x:data' type='submit'><field var='FORM_TYPE'><value>\(MUC.mam)</value></field><field var='with'><value>\($0)</value></field></x>"
            } ?? ""
        try await client.send("<iq type='set' id='own'><query xmlns='\(MUC.mam)' queryid='own'>\(form)</query></iq>")
        var results: [(String, XMLElement)] = []
        while true {
            let element = try await client.nextElement()
            if element.name == "iq" {
                #expect(element.id == "own" && element.type == "result", "\(element.xmlString())")
                return results
            }
            let result = try #require(element.firstChild("result", namespace: MUC.mam), "\(element.xmlString())")
            let message = try #require(result.firstChild("forwarded", namespace: XMLNamespace.forward)?.firstChild("message"))
            results.append((result[attribute: "id"] ?? "", message))
        }
    }

    @Test func aSentPrivateMessageIsCopiedToTheDevicesUnderTheSameNicknameOnly() async throws {
        try await MUC.with { server in
            let (alice, bob, carol) = try await MUCScenarios.threeInTheRoom(server)
            let phone = try await device(server, "bob", "phone")
            _ = try await phone.enter("team", nick: "Bob")
            let tablet = try await device(server, "bob", "tablet")
            let alicePhone = try await device(server, "alice", "phone")

            // The client leaves the <x/> out (as clients before XEP-0045 1.28 do).
            try await bob.send("<message to='\(Self.room)/Alice' type='chat' id='pm1'><body>psst</body></message>")
            let delivered = try await alice.expectMessage(id: "pm1")
            #expect(delivered.from == "\(Self.room)/Bob" && delivered.firstChild("x", namespace: MUC.user) != nil)
            let aliceID = try #require(stanzaID(delivered, by: "alice@localhost"), "\(delivered.xmlString())")

            let carbon = try await phone.expect("message")
            #expect(carbon.from == "bob@localhost" && carbon.to == "bob@localhost/phone" && carbon.type == "chat", "\(carbon.xmlString())")
            let sent = try #require(
                carbon.firstChild("sent", namespace: Self.carbons)?.firstChild("forwarded", namespace: XMLNamespace.forward)?
                    .firstChild("message"), "\(carbon.xmlString())")
            #expect(sent.to == "\(Self.room)/Alice" && sent.from == "bob@localhost/r" && sent.firstChild("body")?.text == "psst")
            #expect(sent.firstChild("x", namespace: MUC.user) != nil, "the copy says it is a room's private message")
            // Each archive has its own id for it (as with Prosody's mod_mam).
            let bobID = try #require(stanzaID(sent, by: "bob@localhost"), "\(sent.xmlString())")
            #expect(bobID != aliceID && sent.children("stanza-id", namespace: Self.sid).count == 1)

            // Bob's tablet is not in the room: it could neither place nor answer it. What the
            // room delivers to Alice is not copied to her other device either.
            for client in [tablet, alicePhone, carol] { try await client.expectNothingPending() }

            // The room gives a private message to every device under the nickname; carbons
            // add nothing.
            try await alice.send("<message to='\(Self.room)/Bob' type='chat' id='pm2'><body>what?</body></message>")
            let toBob = try await bob.expectMessage(id: "pm2")
            let toPhone = try await phone.expectMessage(id: "pm2")
            let id = try #require(stanzaID(toBob, by: "bob@localhost"), "\(toBob.xmlString())")
            #expect(stanzaID(toPhone, by: "bob@localhost") == id, "both copies carry the one archive id")
            #expect(toBob.children("stanza-id", namespace: Self.sid).count == 1)
            for client in [bob, phone, tablet, alicePhone, carol] { try await client.expectNothingPending() }
        }
    }

    @Test func privateMessagesAreKeptOnceInEachAccountsArchiveWithTheRoomAsPeer() async throws {
        try await MUC.with { server in
            let (alice, bob, carol) = try await MUCScenarios.threeInTheRoom(server)
            let phone = try await server.im("bob", "phone", available: false)
            _ = try await phone.enter("team", nick: "Bob")
            try await bob.send(
                "<message to='\(Self.room)/Alice' type='chat' id='pm1'><body>psst</body><x xmlns='\(MUC.user)'/></message>")
            let first = try await alice.expectMessage(id: "pm1")
            try await alice.send("<message to='\(Self.room)/Bob' type='chat' id='pm2'><body>what?</body></message>")
            let second = try await bob.expectMessage(id: "pm2")
            try await phone.expectMessage(id: "pm2")
            // Room traffic is the room's archive's, not the accounts'.
            try await carol.send("<message to='\(Self.room)' type='groupchat' id='g'><body>all</body></message>")
            for client in [alice, bob, carol, phone] { try await client.expectMessage(id: "g") }

            let bobs = try await archive(bob)
            #expect(bobs.map { $0.message.firstChild("body")?.text } == ["psst", "what?"], "once each, whatever the devices")
            #expect(bobs.last?.id == stanzaID(second, by: "bob@localhost"))
            #expect(bobs.first?.message.to == "\(Self.room)/Alice" && bobs.last?.message.from == "\(Self.room)/Alice")
            #expect(bobs.allSatisfy { $0.message.firstChild("x", namespace: MUC.user) != nil })

            let alices = try await archive(alice, with: Self.room)
            #expect(alices.map { $0.message.firstChild("body")?.text } == ["psst", "what?"])
            #expect(alices.first?.id == stanzaID(first, by: "alice@localhost"))
            #expect(try await archive(carol).isEmpty)
            #expect(try await archive(alice, with: "bob@localhost").isEmpty, "the peer is the room, not the real JID")
        }
    }

    @Test func aRefusedPrivateMessageIsNeitherKeptNorCopied() async throws {
        try await MUC.with { server in
            let (_, bob, _) = try await MUCScenarios.threeInTheRoom(server)
            let phone = try await device(server, "bob", "phone")
            _ = try await phone.enter("team", nick: "Bob")
            try await bob.send("<message to='\(Self.room)/Nobody' type='chat' id='lost'><body>?</body></message>")
            #expect(try await bob.expect("message").stanzaErrorCondition == .itemNotFound)
            try await phone.expectNothingPending()
            #expect(try await archive(bob).isEmpty)
        }
    }
}
