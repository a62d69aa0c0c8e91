import ParleyCore
import Testing

/// XEP-0045 §7.10 (registering with a room) and §7.12 (discovering one's reserved nickname),
/// with the owner in the room, a user who registers and a third who finds the nickname taken.
@Suite struct MUCRegistrationScenarios {
    static let room = MUCScenarios.room

    @Test func registeringReservesTheNicknameAndMakesAMember() async throws {
        try await MUC.with { server in
            let alice = try await server.im("alice")
            let bob = try await server.im("bob")
            let carol = try await server.im("carol")
            try await MUC.createInstantRoom(alice, "team", nick: "Alice")

            let asked = try await bob.query("<iq type='get' id='r1' to='\(Self.room)'><query xmlns='\(MUCRoles.register)'/></iq>", id: "r1")
            let form = try #require(asked.firstChild("query", namespace: MUCRoles.register)?.firstChild("x", namespace: "jabber:x:data"), "\(asked.xmlString())")
            #expect(form[attribute: "type"] == "form" && form.formValues["FORM_TYPE"] == MUCRoles.registerForm)
            let fields = form.children("field", namespace: "jabber:x:data").compactMap { $0[attribute: "var"] }
            #expect(
                fields == ["FORM_TYPE", "muc#register_first", "muc#register_last", "muc#register_roomnick", "muc#register_url",
                    "muc#register_email", "muc#register_faqentry"], "\(fields)")
            let required = form.children("field", namespace: "jabber:x:data").filter { $0.firstChild("required", namespace: "jabber:x:data") != nil }
            #expect(required.map { $0[attribute: "var"] } == ["muc#register_roomnick"])

            let done = try await bob.query(MUCRoles.registration("Bobby", id: "r2"), id: "r2")
            #expect(done.type == "result", "\(done.xmlString())")
            // §9.3 for someone not in the room: the owner (a moderator) sees the new member,
            // Bob is told with 101.
            let seen = try await alice.expect("message")
            #expect(seen.from == Self.room && seen.mucItem?[attribute: "affiliation"] == "member", "\(seen.xmlString())")
            #expect(seen.mucItem?[attribute: "jid"] == "bob@localhost")
            let told = try await bob.expect("message")
            #expect(told.from == Self.room && told.type == "headline" && told.statusCodes == [101], "\(told.xmlString())")
            #expect(told.mucItem?[attribute: "affiliation"] == "member")

            let again = try await bob.query("<iq type='get' id='r3' to='\(Self.room)'><query xmlns='\(MUCRoles.register)'/></iq>", id: "r3")
            let registered = again.firstChild("query", namespace: MUCRoles.register)
            #expect(registered?.firstChild("registered", namespace: MUCRoles.register) != nil, "\(again.xmlString())")
            #expect(registered?.firstChild("username", namespace: MUCRoles.register)?.text == "Bobby")

            // §7.12: the reserved nickname, and none for someone without one.
            let nick = try await bob.query(
                "<iq type='get' id='n1' to='\(Self.room)'><query xmlns='\(XMLNamespace.discoInfo)' node='x-roomuser-item'/></iq>", id: "n1")
            let identity = nick.firstChild("query", namespace: XMLNamespace.discoInfo)?.firstChild("identity")
            #expect(identity?[attribute: "name"] == "Bobby" && identity?[attribute: "category"] == "conference", "\(nick.xmlString())")
            let none = try await carol.query(
                "<iq type='get' id='n2' to='\(Self.room)'><query xmlns='\(XMLNamespace.discoInfo)' node='x-roomuser-item'/></iq>", id: "n2")
            #expect(none.type == "result" && none.firstChild("query", namespace: XMLNamespace.discoInfo)?.elements.isEmpty == true)

            // Nobody else may take the nickname, by entering or by registering.
            try await carol.send("<presence to='\(Self.room)/Bobby'><x xmlns='\(MUC.muc)'/></presence>")
            let taken = try await carol.expect("presence")
            #expect(taken.type == "error" && taken.stanzaErrorCondition == .conflict && taken.from == "\(Self.room)/Bobby", "\(taken.xmlString())")
            #expect(taken.firstChild("x", namespace: MUC.muc) != nil, "a refused entry carries the MUC <x/> back")
            let clash = try await carol.query(MUCRoles.registration("Bobby", id: "r4"), id: "r4")
            #expect(clash.stanzaErrorCondition == .conflict, "\(clash.xmlString())")
            try await alice.expectNothingPending()

            let entered = try await bob.enter("team", nick: "Bobby")
            #expect(entered.own.statusCodes == [110] && entered.own.mucItem?[attribute: "affiliation"] == "member")
            try await alice.expectRoomPresence("team", "Bobby")
            let info = try await carol.query("<iq type='get' id='i' to='\(Self.room)'><query xmlns='\(XMLNamespace.discoInfo)'/></iq>", id: "i")
            let features = info.firstChild("query", namespace: XMLNamespace.discoInfo)?.children("feature").compactMap { $0[attribute: "var"] } ?? []
            #expect(features.contains(MUCRoles.register), "\(features)")
        }
    }

    @Test func whoMayNotRegisterIsToldWhy() async throws {
        try await MUC.with { server in
            let alice = try await server.im("alice")
            let bob = try await server.im("bob")
            let carol = try await server.im("carol")
            try await MUC.createInstantRoom(alice, "team", nick: "Alice")
            let get = "<query xmlns='\(MUCRoles.register)'/>"

            let noRoom = try await bob.query("<iq type='get' id='e0' to='nowhere@\(MUC.service)'>\(get)</iq>", id: "e0")
            #expect(noRoom.stanzaErrorCondition == .itemNotFound, "\(noRoom.xmlString())")
            let noForm = try await bob.query("<iq type='set' id='e1' to='\(Self.room)'>\(get)</iq>", id: "e1")
            #expect(noForm.stanzaErrorCondition == .badRequest, "\(noForm.xmlString())")
            let wrongType = try await bob.query(
                """
                <iq type='set' id='e2' to='\(Self.room)'><query xmlns='\(MUCRoles.register)'><x xmlns='jabber:x:data' type='submit'>\
                <field var='FORM_TYPE'><value>urn:other</value></field><field var='muc#register_roomnick'><value>B</value></field></x></query></iq>
                """, id: "e2")
            #expect(wrongType.stanzaErrorCondition == .badRequest, "\(wrongType.xmlString())")
            let noNick = try await bob.query(MUCRoles.registration("", id: "e3"), id: "e3")
            #expect(noNick.stanzaErrorCondition == .badRequest, "\(noNick.xmlString())")
            let blank = try await bob.query(MUCRoles.registration("   ", id: "e4"), id: "e4")
            #expect(blank.stanzaErrorCondition == .badRequest, "\(blank.xmlString())")

            // Banned: forbidden (Carol is not in the room: the owner sees the change).
            try await alice.sendAdmin("<item jid='carol@localhost' affiliation='outcast'/>", id: "b")
            _ = try await alice.expect("message")
            try await alice.expectResult("b")
            _ = try await carol.expect("message")
            let banned = try await carol.query("<iq type='get' id='e5' to='\(Self.room)'>\(get)</iq>", id: "e5")
            #expect(banned.stanzaErrorCondition == .forbidden, "\(banned.xmlString())")

            // Members-only: someone not on the lists may not register (not-allowed).
            try await MUCAccessScenarios.configure(alice, "<field var='muc#roomconfig_membersonly'><value>1</value></field>")
            try await alice.expectRoomStatus([104])
            let closed = try await bob.query("<iq type='get' id='e6' to='\(Self.room)'>\(get)</iq>", id: "e6")
            #expect(closed.stanzaErrorCondition == .notAllowed, "\(closed.xmlString())")
            try await alice.expectNothingPending()
        }
    }

    @Test func cancellingTheRegistrationGivesUpMembershipAndTheNickname() async throws {
        try await MUC.with { server in
            let alice = try await server.im("alice")
            let bob = try await server.im("bob")
            let carol = try await server.im("carol")
            try await MUC.createInstantRoom(alice, "team", nick: "Alice")
            #expect(try await bob.query(MUCRoles.registration("Bobby", id: "r"), id: "r").type == "result")
            _ = try await alice.expect("message")
            _ = try await bob.expect("message")
            let removed = try await bob.query("<iq type='set' id='x' to='\(Self.room)'><query xmlns='\(MUCRoles.register)'><remove/></query></iq>", id: "x")
            #expect(removed.type == "result", "\(removed.xmlString())")
            let seen = try await alice.expect("message")
            #expect(seen.mucItem?[attribute: "affiliation"] == "none", "\(seen.xmlString())")
            #expect(try await bob.expect("message").statusCodes == [101])
            let members = try await alice.query(
                "<iq type='get' id='m' to='\(Self.room)'><query xmlns='\(MUCRoles.admin)'><item affiliation='member'/></query></iq>", id: "m")
            #expect(members.firstChild("query", namespace: MUCRoles.admin)?.elements.isEmpty == true, "\(members.xmlString())")
            // The nickname is free again.
            #expect(try await carol.enter("team", nick: "Bobby").own.statusCodes == [110])
            let twice = try await bob.query("<iq type='set' id='y' to='\(Self.room)'><query xmlns='\(MUCRoles.register)'><remove/></query></iq>", id: "y")
            #expect(twice.stanzaErrorCondition == .itemNotFound, "\(twice.xmlString())")
        }
    }

    @Test func anEnforcedReservationIsAssignedOnEntryWith210() async throws {
        try await MUC.with({ $0.nicknames.enforceRegistered = true }) { server in
            let alice = try await server.im("alice")
            let bob = try await server.im("bob")
            let carol = try await server.im("carol")
            try await MUC.createInstantRoom(alice, "team", nick: "Alice")
            #expect(try await bob.query(MUCRoles.registration("Bobby", id: "r"), id: "r").type == "result")
            _ = try await alice.expect("message")
            _ = try await bob.expect("message")
            _ = try await carol.enter("team", nick: "Carol")
            try await alice.expectRoomPresence("team", "Carol")

            let entered = try await bob.enter("team", nick: "Bob")
            #expect(entered.own.from == "\(Self.room)/Bobby" && entered.own.statusCodes == [110, 210], "\(entered.own.xmlString())")
            let seen = try await carol.expectRoomPresence("team", "Bobby")
            #expect(seen.statusCodes.isEmpty, "210 is for the occupant itself")
            try await alice.expectRoomPresence("team", "Bobby")
            try await bob.send("<presence to='\(Self.room)/Robert'/>")
            let refused = try await bob.expect("presence")
            #expect(refused.type == "error" && refused.stanzaErrorCondition == .notAcceptable, "\(refused.xmlString())")
            for client in [alice, carol] { try await client.expectNothingPending() }
        }
    }

    @Test func aNicknameThePreparationChangedIsAnnouncedWith210() async throws {
        try await MUC.with { server in
            let alice = try await server.im("alice")
            let bob = try await server.im("bob")
            let carol = try await server.im("carol")
            try await MUC.createInstantRoom(alice, "team", nick: "Alice")
            // "René" written decomposed (e + U+0301); RFC 7622 prepares it to NFC.
            try await bob.send("<presence to='\(Self.room)/Rene\u{301}'><x xmlns='\(MUC.muc)'/></presence>")
            let entered = try await bob.enterReplies()
            #expect(entered.own.statusCodes == [110, 210], "\(entered.own.xmlString())")
            #expect(entered.own.from.map { Array($0.utf8) } == Array("\(Self.room)/Ren\u{E9}".utf8), "the prepared nickname")
            try await alice.expectRoomPresence("team", "Ren\u{E9}")
            let plain = try await carol.enter("team", nick: "Carol")
            #expect(plain.own.statusCodes == [110])
            try await alice.expectRoomPresence("team", "Carol")
            try await bob.expectRoomPresence("team", "Carol")

            // A nickname change the preparation altered says 210 too (as Prosody).
            try await carol.send("<presence to='\(Self.room)/Zoe\u{308}'/>")
            try await carol.expectRoomPresence("team", "Carol", type: "unavailable", codes: [110, 303])
            let renamed = try await carol.expect("presence")
            #expect(renamed.statusCodes == [110, 210] && renamed.from.map { Array($0.utf8) } == Array("\(Self.room)/Zo\u{EB}".utf8), "\(renamed.xmlString())")
            for client in [alice, bob] {
                try await client.expectRoomPresence("team", "Carol", type: "unavailable", codes: [303])
                #expect(try await client.expect("presence").statusCodes == [], "210 is for the occupant itself")
            }
        }
    }

    @Test func aReservationAndModerationSurviveARestartOfAPersistentRoom() async throws {
        try await MUC.with { server in
            let alice = try await server.im("alice")
            let bob = try await server.im("bob")
            try await MUCRoles.createRoom(
                alice, nick: "Alice",
                fields: "<field var='muc#roomconfig_persistentroom'><value>1</value></field><field var='muc#roomconfig_moderatedroom'><value>1</value></field>")
            #expect(try await bob.query(MUCRoles.registration("Bobby", id: "r"), id: "r").type == "result")
            await alice.close()
            await bob.close()

            try await server.restart()
            let carol = try await server.im("carol")
            try await carol.send("<presence to='\(Self.room)/Bobby'><x xmlns='\(MUC.muc)'/></presence>")
            #expect(try await carol.expect("presence").stanzaErrorCondition == .conflict, "the reservation was kept")
            let entered = try await carol.enter("team", nick: "Carol")
            #expect(entered.own.mucItem?[attribute: "role"] == "visitor", "still moderated: \(entered.own.xmlString())")
            let back = try await server.im("bob")
            let bobIn = try await back.enter("team", nick: "Bobby")
            #expect(bobIn.own.mucItem?[attribute: "affiliation"] == "member" && bobIn.own.mucItem?[attribute: "role"] == "participant")
            let nick = try await back.query(
                "<iq type='get' id='n' to='\(Self.room)'><query xmlns='\(XMLNamespace.discoInfo)' node='x-roomuser-item'/></iq>", id: "n")
            #expect(nick.firstChild("query", namespace: XMLNamespace.discoInfo)?.firstChild("identity")?[attribute: "name"] == "Bobby")
        }
    }
}
