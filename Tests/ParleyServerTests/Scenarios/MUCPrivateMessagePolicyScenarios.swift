import ParleyCore
import ParleyTestSupport
import Testing

/// Who may send private messages (`muc#roomconfig_allowpm`, XEP-0045 §15.5.3): anyone,
/// participants, moderators or no one, judged by the sender's role as Prosody's mod_muc
/// does; a refused one is a `policy-violation` (cancel) from the occupant JID and reaches no
/// one. Shown in the configuration form and in the room's `muc#roominfo`, kept by a
/// persistent room across a restart.
@Suite struct MUCPrivateMessagePolicyScenarios {
    static let room = MUCScenarios.room

    private func allowPM(_ client: TestClient) async throws -> XMLElement? {
        let form = try await client.query("<iq type='get' id='f' to='\(Self.room)'><query xmlns='\(MUC.owner)'/></iq>", id: "f")
        try SchemaValidator.shared.validate(form.xmlString())
        return form.firstChild("query", namespace: MUC.owner)?.firstChild("x", namespace: XMLNamespace.dataForms)?
            .children("field", namespace: XMLNamespace.dataForms).first { $0[attribute: "var"] == "muc#roomconfig_allowpm" }
    }

    private func roomInfoAllowPM(_ client: TestClient) async throws -> String? {
        let info = try await client.query(
            "<iq type='get' id='di' to='\(Self.room)'><query xmlns='\(XMLNamespace.discoInfo)'/></iq>", id: "di")
        try SchemaValidator.shared.validate(info.xmlString())
        return info.firstChild("query", namespace: XMLNamespace.discoInfo)?.firstChild("x", namespace: XMLNamespace.dataForms)?
            .formValues["muc#roomconfig_allowpm"]
    }

    /// `from` sends a private message to `nick` and must get it refused with `text`.
    private func expectRefused(_ from: TestClient, to nick: String, id: String, text: String) async throws {
        try await from.send("<message to='\(Self.room)/\(nick)' type='chat' id='\(id)'><body>psst</body></message>")
        let error = try await from.expect("message")
        try SchemaValidator.shared.validate(error.xmlString())
        #expect(error.type == "error" && error.id == id && error.from == "\(Self.room)/\(nick)", "\(error.xmlString())")
        #expect(error.stanzaErrorCondition == .policyViolation && error.stanzaErrorText == text, "\(error.xmlString())")
        #expect(error.firstChild("error")?[attribute: "type"] == "cancel", "\(error.xmlString())")
    }

    private func pm(_ from: TestClient, to nick: String, _ recipient: TestClient, id: String) async throws {
        try await from.send("<message to='\(Self.room)/\(nick)' type='chat' id='\(id)'><body>hi</body></message>")
        let delivered = try await recipient.expectMessage(id: id)
        #expect(delivered.type == "chat" && delivered.firstChild("body")?.text == "hi", "\(delivered.xmlString())")
    }

    @Test func moderatorsOnlyRefusesParticipantsAndIsShownInTheFormAndRoomInfo() async throws {
        try await MUC.with { server in
            let (alice, bob, carol) = try await MUCScenarios.threeInTheRoom(server)
            let field = try #require(try await allowPM(alice))
            #expect(field[attribute: "type"] == "list-single" && field.firstChild("value")?.text == "anyone", "\(field.xmlString())")
            #expect(
                field.children("option").compactMap { $0.firstChild("value")?.text } == ["anyone", "participants", "moderators", "none"])
            #expect(try await roomInfoAllowPM(bob) == "anyone")
            try await pm(bob, to: "Carol", carol, id: "before")

            try await MUC.configure(alice, "team", "<field var='muc#roomconfig_allowpm'><value>moderators</value></field>")
            for client in [alice, bob, carol] { try await client.expectRoomStatus([104]) }
            #expect(try await roomInfoAllowPM(carol) == "moderators")
            #expect(try await allowPM(alice)?.firstChild("value")?.text == "moderators")

            try await expectRefused(bob, to: "Carol", id: "p1", text: "Only moderators may send private messages in this room.")
            try await expectRefused(bob, to: "Alice", id: "p2", text: "Only moderators may send private messages in this room.")
            try await pm(alice, to: "Bob", bob, id: "m1")
            // To one's own nickname (one's other devices) is always allowed.
            try await pm(bob, to: "Bob", bob, id: "self")
            for client in [alice, bob, carol] { try await client.expectNothingPending() }
        }
    }

    @Test func participantsOnlyRefusesVisitorsUntilTheyGetVoice() async throws {
        try await MUC.with { server in
            let alice = try await server.im("alice")
            let bob = try await server.im("bob")
            let carol = try await server.im("carol")
            try await MUCRoles.createRoom(
                alice, nick: "Alice",
                fields:
                    "<field var='muc#roomconfig_moderatedroom'><value>1</value></field><field var='muc#roomconfig_allowpm'><value>participants</value></field>"
            )
            #expect(try await bob.enter("team", nick: "Bob").own.mucItem?[attribute: "role"] == "visitor")
            try await alice.expectRoomPresence("team", "Bob")
            _ = try await carol.enter("team", nick: "Carol")
            try await alice.expectRoomPresence("team", "Carol")
            try await bob.expectRoomPresence("team", "Carol")

            let text = "Only participants and moderators may send private messages in this room."
            try await expectRefused(carol, to: "Bob", id: "v1", text: text)
            try await expectRefused(bob, to: "Alice", id: "v2", text: text)
            try await pm(alice, to: "Carol", carol, id: "m1")

            try await alice.sendAdmin("<item nick='Bob' role='participant'/>", id: "voice")
            _ = try await alice.expectRoomPresence("team", "Bob")
            try await alice.expectResult("voice")
            _ = try await bob.expectRoomPresence("team", "Bob", codes: [110])
            _ = try await carol.expectRoomPresence("team", "Bob")
            try await pm(bob, to: "Carol", carol, id: "p1")
            try await expectRefused(carol, to: "Bob", id: "v3", text: text)
            for client in [alice, bob, carol] { try await client.expectNothingPending() }
        }
    }

    @Test func noneRefusesEvenModeratorsAndABadValueIsRefused() async throws {
        try await MUC.with { server in
            let (alice, bob, carol) = try await MUCScenarios.threeInTheRoom(server)
            try await MUC.configure(alice, "team", "<field var='muc#roomconfig_allowpm'><value>none</value></field>")
            for client in [alice, bob, carol] { try await client.expectRoomStatus([104]) }
            try await expectRefused(alice, to: "Bob", id: "n1", text: "Private messages are off in this room.")
            try await expectRefused(carol, to: "Bob", id: "n2", text: "Private messages are off in this room.")

            let bad = try await alice.query(
                "<iq type='set' id='b' to='\(Self.room)'><query xmlns='\(MUC.owner)'><x xmlns='jabber:x:data' type='submit'><field var='muc#roomconfig_allowpm'><value>friends</value></field></x></query></iq>",
                id: "b")
            #expect(bad.stanzaErrorCondition == .notAcceptable, "\(bad.xmlString())")
            #expect(try await allowPM(alice)?.firstChild("value")?.text == "none", "a refused form changes nothing")

            // Prosody's names for the same choices (the lowest role allowed) are understood.
            try await MUC.configure(alice, "team", "<field var='muc#roomconfig_allowpm'><value>visitor</value></field>")
            for client in [alice, bob, carol] { try await client.expectRoomStatus([104]) }
            #expect(try await allowPM(alice)?.firstChild("value")?.text == "anyone")
            try await pm(carol, to: "Bob", bob, id: "again")
            for client in [alice, bob, carol] { try await client.expectNothingPending() }
        }
    }

    @Test func aPersistentRoomKeepsItsPrivateMessagePolicyAcrossARestart() async throws {
        try await MUC.with { server in
            let alice = try await server.im("alice")
            try await MUCRoles.createRoom(
                alice, nick: "Alice",
                fields:
                    "<field var='muc#roomconfig_persistentroom'><value>1</value></field><field var='muc#roomconfig_allowpm'><value>moderators</value></field>"
            )
            await alice.close()

            try await server.restart()
            let owner = try await server.im("alice")
            let bob = try await server.im("bob")
            _ = try await owner.enter("team", nick: "Alice")
            _ = try await bob.enter("team", nick: "Bob")
            try await owner.expectRoomPresence("team", "Bob")
            #expect(try await roomInfoAllowPM(bob) == "moderators")
            #expect(try await allowPM(owner)?.firstChild("value")?.text == "moderators")
            try await expectRefused(bob, to: "Alice", id: "r1", text: "Only moderators may send private messages in this room.")
            try await pm(owner, to: "Bob", bob, id: "r2")
            for client in [owner, bob] { try await client.expectNothingPending() }
        }
    }
}
