import ParleyCore
import ParleyTestSupport
import Testing

/// A room's own occupant limit (`muc#roomconfig_maxusers`, XEP-0045 §15.5.3): offered up to
/// the service's limit, refused above it; a full room turns newcomers away with
/// `service-unavailable` of type wait (§7.2.10) and lets its admins and owners in; a
/// persistent room keeps its limit across a restart.
@Suite struct MUCOccupantLimitScenarios {
    static let room = MUCScenarios.room

    private func limitField(_ owner: TestClient) async throws -> XMLElement? {
        let form = try await owner.query("<iq type='get' id='f' to='\(Self.room)'><query xmlns='\(MUC.owner)'/></iq>", id: "f")
        try SchemaValidator.shared.validate(form.xmlString())
        return form.firstChild("query", namespace: MUC.owner)?.firstChild("x", namespace: XMLNamespace.dataForms)?
            .children("field", namespace: XMLNamespace.dataForms).first { $0[attribute: "var"] == "muc#roomconfig_maxusers" }
    }

    private func configureRefused(_ owner: TestClient, _ value: String, id: String) async throws -> XMLElement {
        try await owner.query(
            """
            <iq type='set' id='\(id)' to='\(Self.room)'><query xmlns='\(MUC.owner)'><x xmlns='jabber:x:data' type='submit'>\
            <field var='muc#roomconfig_maxusers'><value>\(value)</value></field></x></query></iq>
            """, id: id)
    }

    private func expectFull(_ client: TestClient, nick: String, limit: Int) async throws {
        try await client.send("<presence to='\(Self.room)/\(nick)'><x xmlns='\(MUC.muc)'/></presence>")
        let full = try await client.expect("presence")
        try SchemaValidator.shared.validate(full.xmlString())
        #expect(full.type == "error" && full.stanzaErrorCondition == .serviceUnavailable, "\(full.xmlString())")
        #expect(full.firstChild("error")?[attribute: "type"] == "wait", "\(full.xmlString())")
        #expect(full.stanzaErrorText == "The room is full (\(limit) occupants).", "\(full.xmlString())")
    }

    @Test func aLowerLimitTurnsTheNextNewcomerAwayButNotAnAdmin() async throws {
        try await MUC.with({ $0.maxOccupantsPerRoom = 50 }) { server in
            let alice = try await server.im("alice")
            let bob = try await server.im("bob")
            let carol = try await server.im("carol")
            try await MUC.createInstantRoom(alice, "team", nick: "Alice")
            let field = try #require(try await limitField(alice))
            #expect(field[attribute: "type"] == "list-single" && field.firstChild("value")?.text == "none", "\(field.xmlString())")
            #expect(
                field.children("option").compactMap { $0.firstChild("value")?.text } == ["10", "20", "30", "50", "none"],
                "limits up to the service's 50: \(field.xmlString())")

            try await MUC.configure(alice, "team", "<field var='muc#roomconfig_maxusers'><value>2</value></field>")
            try await alice.expectRoomStatus([104])
            #expect(try await limitField(alice)?.firstChild("value")?.text == "2")
            #expect(
                try await limitField(alice)?.children("option").compactMap { $0.firstChild("value")?.text } == ["2", "10", "20", "30", "50", "none"],
                "the room's own limit is among the options")
            _ = try await bob.enter("team", nick: "Bob")
            try await alice.expectRoomPresence("team", "Bob")
            try await expectFull(carol, nick: "Carol", limit: 2)

            // §7.2.10: admins still get in.
            try await alice.sendAdmin("<item jid='carol@localhost' affiliation='admin'/>", id: "a")
            #expect(try await alice.expect("message").mucItem?[attribute: "affiliation"] == "admin")
            try await alice.expectResult("a")
            #expect(try await carol.expect("message").statusCodes == [101])
            #expect(try await carol.enter("team", nick: "Carol").own.mucItem?[attribute: "affiliation"] == "admin")
            for client in [alice, bob] { try await client.expectRoomPresence("team", "Carol") }

            // A second device of an occupant is the same occupant, not one more.
            let bobPhone = try await server.im("bob", "phone")
            #expect(try await bobPhone.enter("team", nick: "Bob").own.statusCodes == [110])
            // (Bob's first device has the phone's own presence, not the room's.)
            for client in [alice, carol] { try await client.expectNothingPending() }
        }
    }

    @Test func aLimitAboveTheServicesOrNotANumberIsRefusedAndNoneIsTheServicesLimit() async throws {
        try await MUC.with({ $0.maxOccupantsPerRoom = 50 }) { server in
            let alice = try await server.im("alice")
            let bob = try await server.im("bob")
            try await MUC.createInstantRoom(alice, "team", nick: "Alice")
            try await MUC.configure(alice, "team", "<field var='muc#roomconfig_maxusers'><value>1</value></field>")
            try await alice.expectRoomStatus([104])
            try await expectFull(bob, nick: "Bob", limit: 1)

            let above = try await configureRefused(alice, "51", id: "above")
            #expect(above.stanzaErrorCondition == .notAcceptable, "\(above.xmlString())")
            #expect(above.stanzaErrorText == "muc#roomconfig_maxusers is at most 50 on this service, not 51.")
            for (value, id) in [("lots", "word"), ("0", "zero"), ("-3", "negative")] {
                let bad = try await configureRefused(alice, value, id: id)
                #expect(bad.stanzaErrorCondition == .badRequest, "\(value): \(bad.xmlString())")
            }
            #expect(try await limitField(alice)?.firstChild("value")?.text == "1", "a refused form changes nothing")

            try await MUC.configure(alice, "team", "<field var='muc#roomconfig_maxusers'><value>none</value></field>")
            try await alice.expectRoomStatus([104])
            #expect(try await limitField(alice)?.firstChild("value")?.text == "none")
            _ = try await bob.enter("team", nick: "Bob")
            try await alice.expectRoomPresence("team", "Bob")
            for client in [alice, bob] { try await client.expectNothingPending() }
        }
    }

    @Test func aPersistentRoomKeepsItsLimitAcrossARestart() async throws {
        try await MUC.with { server in
            let alice = try await server.im("alice")
            try await MUCRoles.createRoom(
                alice, nick: "Alice",
                fields:
                    "<field var='muc#roomconfig_persistentroom'><value>1</value></field><field var='muc#roomconfig_maxusers'><value>1</value></field>"
            )
            await alice.close()

            try await server.restart()
            let owner = try await server.im("alice")
            let bob = try await server.im("bob")
            _ = try await owner.enter("team", nick: "Alice")
            try await expectFull(bob, nick: "Bob", limit: 1)
            #expect(try await limitField(owner)?.firstChild("value")?.text == "1")
            for client in [owner, bob] { try await client.expectNothingPending() }
        }
    }
}

/// Who may invite (XEP-0045 §7.8.2, as Prosody): any occupant with voice in an open room; in
/// a members-only room admins and owners, and members too when the owners allow it
/// (`muc#roomconfig_allowinvites`, or Prosody's own field); whoever a members-only room's
/// invitation names becomes a member, so the invitee can enter. An invitation to a
/// password-protected room carries the password.
@Suite struct MUCInvitationPolicyScenarios {
    static let room = MUCScenarios.room

    private func invite(_ client: TestClient, _ invitee: String, id: String) async throws {
        try await client.send(
            "<message to='\(Self.room)' id='\(id)'><x xmlns='\(MUC.user)'><invite to='\(invitee)'><reason>join us</reason></invite></x></message>")
    }

    private func expectForbidden(_ client: TestClient, id: String, text: String) async throws {
        let refused = try await client.expect("message")
        try SchemaValidator.shared.validate(refused.xmlString())
        #expect(refused.type == "error" && refused.id == id && refused.stanzaErrorCondition == .forbidden, "\(refused.xmlString())")
        #expect(refused.stanzaErrorText == text, "\(refused.xmlString())")
    }

    private func expectInvitation(_ client: TestClient, from inviter: String, password: String? = nil) async throws {
        let invitation = try await client.expect("message")
        try SchemaValidator.shared.validate(invitation.xmlString())
        let x = invitation.firstChild("x", namespace: MUC.user)
        #expect(invitation.from == Self.room && x?.firstChild("invite", namespace: MUC.user)?[attribute: "from"] == inviter, "\(invitation.xmlString())")
        #expect(x?.firstChild("password", namespace: MUC.user)?.text == password, "\(invitation.xmlString())")
    }

    /// Alice, Bob and Carol logged in, Alice alone in `team` configured with `fields`.
    private func threeWithARoom(_ server: TestServer, fields: String) async throws -> (TestClient, TestClient, TestClient) {
        let alice = try await server.im("alice")
        let bob = try await server.im("bob")
        let carol = try await server.im("carol")
        try await MUCRoles.createRoom(alice, nick: "Alice", fields: fields)
        return (alice, bob, carol)
    }

    private func roomInfoAllowInvites(_ client: TestClient) async throws -> String? {
        let info = try await client.query(
            "<iq type='get' id='di' to='\(Self.room)'><query xmlns='\(XMLNamespace.discoInfo)'/></iq>", id: "di")
        try SchemaValidator.shared.validate(info.xmlString())
        return info.firstChild("query", namespace: XMLNamespace.discoInfo)?.firstChild("x", namespace: XMLNamespace.dataForms)?
            .formValues["muc#roomconfig_allowinvites"]
    }

    @Test func inAMembersOnlyRoomMembersInviteOnlyWhenAllowedAndInviteesBecomeMembers() async throws {
        try await MUC.with { server in
            let (alice, bob, carol) = try await threeWithARoom(
                server,
                fields:
                    "<field var='muc#roomconfig_persistentroom'><value>1</value></field><field var='muc#roomconfig_membersonly'><value>1</value></field>")
            try await alice.sendAdmin("<item jid='bob@localhost' affiliation='member'/>", id: "m")
            #expect(try await alice.expect("message").mucItem?[attribute: "jid"] == "bob@localhost")
            try await alice.expectResult("m")
            #expect(try await bob.expect("message").statusCodes == [101])
            _ = try await bob.enter("team", nick: "Bob")
            try await alice.expectRoomPresence("team", "Bob")
            #expect(try await roomInfoAllowInvites(bob) == "0")

            try await invite(bob, "carol@localhost", id: "i1")
            try await expectForbidden(bob, id: "i1", text: "Only the room's admins and owners may invite others to this members-only room.")
            try await carol.expectNothingPending()

            try await MUC.configure(alice, "team", "<field var='muc#roomconfig_allowinvites'><value>1</value></field>")
            for client in [alice, bob] { try await client.expectRoomStatus([104]) }
            #expect(try await roomInfoAllowInvites(bob) == "1")
            let form = try await alice.query("<iq type='get' id='f' to='\(Self.room)'><query xmlns='\(MUC.owner)'/></iq>", id: "f")
            let values = form.firstChild("query", namespace: MUC.owner)?.firstChild("x", namespace: XMLNamespace.dataForms)?.formValues
            #expect(values?["muc#roomconfig_allowinvites"] == "1" && values?["{http://prosody.im/protocol/muc}roomconfig_allowmemberinvites"] == "1")

            try await invite(bob, "carol@localhost", id: "i2")
            // The room tells its owner (who sees real JIDs) and Carol of the membership, then
            // passes the invitation on.
            let announced = try await alice.expect("message")
            #expect(announced.mucItem?[attribute: "jid"] == "carol@localhost" && announced.mucItem?[attribute: "affiliation"] == "member")
            #expect(try await carol.expect("message").statusCodes == [101])
            try await expectInvitation(carol, from: "bob@localhost")
            #expect(try await carol.enter("team", nick: "Carol").own.mucItem?[attribute: "affiliation"] == "member")
            for client in [alice, bob] { try await client.expectRoomPresence("team", "Carol") }
            for client in [alice, bob, carol] { try await client.expectNothingPending() }

            // The membership and the setting were stored with the room.
            for client in [alice, bob, carol] { await client.close() }
            try await server.restart()
            let owner = try await server.im("alice")
            let members = try await owner.query(
                "<iq type='get' id='ml' to='\(Self.room)'><query xmlns='\(MUCRoles.admin)'><item affiliation='member'/></query></iq>", id: "ml")
            let jids = members.firstChild("query", namespace: MUCRoles.admin)?.children("item").compactMap { $0[attribute: "jid"] }
            #expect(jids?.sorted() == ["bob@localhost", "carol@localhost"], "\(members.xmlString())")
            let guest = try await server.im("carol")
            #expect(try await roomInfoAllowInvites(guest) == "1")
        }
    }

    @Test func anAdminsInvitationMakesAMemberAndProsodysFieldTurnsMemberInvitesOff() async throws {
        try await MUC.with { server in
            let (alice, bob, carol) = try await threeWithARoom(
                server,
                fields:
                    "<field var='muc#roomconfig_membersonly'><value>1</value></field><field var='muc#roomconfig_allowinvites'><value>1</value></field>")
            try await invite(alice, "bob@localhost", id: "i1")
            #expect(try await alice.expect("message").mucItem?[attribute: "jid"] == "bob@localhost")
            #expect(try await bob.expect("message").statusCodes == [101])
            try await expectInvitation(bob, from: "alice@localhost")
            _ = try await bob.enter("team", nick: "Bob")
            try await alice.expectRoomPresence("team", "Bob")

            // Prosody's name for the same setting; a client returning the whole form sends
            // both, and the one that changed wins.
            try await MUC.configure(
                alice, "team",
                "<field var='muc#roomconfig_allowinvites'><value>1</value></field><field var='{http://prosody.im/protocol/muc}roomconfig_allowmemberinvites'><value>0</value></field>"
            )
            for client in [alice, bob] { try await client.expectRoomStatus([104]) }
            try await invite(bob, "carol@localhost", id: "i2")
            try await expectForbidden(bob, id: "i2", text: "Only the room's admins and owners may invite others to this members-only room.")
            for client in [alice, bob, carol] { try await client.expectNothingPending() }
        }
    }

    @Test func visitorsMayNotInviteAndAPasswordTravelsWithTheInvitation() async throws {
        try await MUC.with { server in
            let (alice, bob, carol) = try await threeWithARoom(
                server,
                fields: """
                    <field var='muc#roomconfig_moderatedroom'><value>1</value></field>\
                    <field var='muc#roomconfig_passwordprotectedroom'><value>1</value></field>\
                    <field var='muc#roomconfig_roomsecret'><value>s3cret</value></field>
                    """)
            #expect(try await roomInfoAllowInvites(alice) == "1", "an open room: occupants with voice invite")
            try await bob.send("<presence to='\(Self.room)/Bob'><x xmlns='\(MUC.muc)'><password>s3cret</password></x></presence>")
            #expect(try await bob.enterReplies().own.mucItem?[attribute: "role"] == "visitor")
            try await alice.expectRoomPresence("team", "Bob")

            try await invite(bob, "carol@localhost", id: "v1")
            try await expectForbidden(bob, id: "v1", text: "Visitors may not invite others to this room; ask for voice first.")
            try await carol.expectNothingPending()

            try await invite(alice, "carol@localhost", id: "o1")
            try await expectInvitation(carol, from: "alice@localhost", password: "s3cret")
            try await carol.send("<presence to='\(Self.room)/Carol'><x xmlns='\(MUC.muc)'><password>s3cret</password></x></presence>")
            #expect(try await carol.enterReplies().own.statusCodes == [110])
            for client in [alice, bob] { try await client.expectRoomPresence("team", "Carol") }
            for client in [alice, bob, carol] { try await client.expectNothingPending() }
        }
    }
}
