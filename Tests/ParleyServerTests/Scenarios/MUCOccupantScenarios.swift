import ParleyCore
import ParleyServer
import Testing

/// XEP-0045 occupants over time: nickname changes, leaving, several devices under one
/// nickname, a dropped connection, non-anonymous rooms, temporary rooms, who may create
/// rooms, and self-ping (XEP-0410).
@Suite struct MUCOccupantScenarios {
    static let room = MUCScenarios.room

    @Test func aNicknameChangeIsAnnouncedWith303ThenTheNewName() async throws {
        try await MUC.with { server in
            let (alice, bob, carol) = try await MUCScenarios.threeInTheRoom(server)
            let before = try await carol.sync()
            #expect(before.isEmpty)
            try await bob.send("<presence to='\(Self.room)/Robert'/>")
            let leaving = try await bob.expectRoomPresence("team", "Bob", type: "unavailable", codes: [110, 303])
            #expect(leaving.mucItem?[attribute: "nick"] == "Robert", "\(leaving.xmlString())")
            let arriving = try await bob.expectRoomPresence("team", "Robert", codes: [110])
            for client in [alice, carol] {
                let old = try await client.expectRoomPresence("team", "Bob", type: "unavailable", codes: [303])
                #expect(old.mucItem?[attribute: "nick"] == "Robert")
                let new = try await client.expectRoomPresence("team", "Robert")
                #expect(new.occupantID == arriving.occupantID && new.occupantID == old.occupantID, "the occupant id stays")
            }
            try await carol.send("<presence to='\(Self.room)/Alice'/>")
            let taken = try await carol.expect("presence")
            #expect(taken.type == "error" && taken.stanzaErrorCondition == .conflict, "\(taken.xmlString())")
        }
    }

    @Test func leavingSendsUnavailableWith110ToSelfAndUnavailableToOthers() async throws {
        try await MUC.with { server in
            let (alice, bob, carol) = try await MUCScenarios.threeInTheRoom(server)
            try await bob.send("<presence to='\(Self.room)/Bob' type='unavailable'><status>bye</status></presence>")
            let own = try await bob.expectRoomPresence("team", "Bob", type: "unavailable", codes: [110])
            #expect(own.mucItem?[attribute: "role"] == "none")
            for client in [alice, carol] {
                let gone = try await client.expectRoomPresence("team", "Bob", type: "unavailable")
                #expect(gone.firstChild("status")?.text == "bye" && gone.mucItem?[attribute: "role"] == "none", "\(gone.xmlString())")
            }
            try await bob.send("<message to='\(Self.room)' type='groupchat' id='late'><body>still here?</body></message>")
            #expect(try await bob.expect("message").stanzaErrorCondition == .notAcceptable)
        }
    }

    @Test func aDroppedConnectionMakesTheOccupantLeave() async throws {
        try await MUC.with { server in
            let (alice, bob, carol) = try await MUCScenarios.threeInTheRoom(server)
            await bob.close()
            for client in [alice, carol] {
                try await client.expectRoomPresence("team", "Bob", type: "unavailable")
            }
            try await server.waitUntilOffline("bob")
            try await alice.send("<message to='\(Self.room)' type='groupchat' id='after'><body>anyone?</body></message>")
            for client in [alice, carol] { try await client.expectMessage(id: "after") }
            try await alice.expectNothingPending()
        }
    }

    @Test func oneAccountOnSeveralDevicesIsOneOccupantAndEveryDeviceGetsTheTraffic() async throws {
        try await MUC.with { server in
            let (alice, bob, carol) = try await MUCScenarios.threeInTheRoom(server)
            let phone = try await server.im("bob", "phone", available: false)
            let entry = try await phone.enter("team", nick: "Bob")
            #expect(Set(entry.others.compactMap(\.from)) == ["\(Self.room)/Alice", "\(Self.room)/Carol"])
            #expect(entry.own.statusCodes == [110])
            for client in [alice, bob, carol] { try await client.expectNothingPending("the occupant was already there") }

            try await carol.send("<message to='\(Self.room)' type='groupchat' id='all'><body>to everyone</body></message>")
            for client in [alice, bob, carol, phone] { try await client.expectMessage(id: "all") }
            try await alice.send("<message to='\(Self.room)/Bob' type='chat' id='pm'><body>both devices</body></message>")
            for client in [bob, phone] { try await client.expectMessage(id: "pm") }

            // One device leaving keeps the occupant; the last one takes it out.
            try await phone.send("<presence to='\(Self.room)/Bob' type='unavailable'/>")
            try await phone.expectRoomPresence("team", "Bob", type: "unavailable", codes: [110])
            for client in [alice, carol] { try await client.expectNothingPending() }
            await bob.close()
            for client in [alice, carol] { try await client.expectRoomPresence("team", "Bob", type: "unavailable") }
        }
    }

    @Test func aNonAnonymousRoomSays100AndShowsRealJIDsToEveryone() async throws {
        try await MUC.with { server in
            let alice = try await server.im("alice")
            let bob = try await server.im("bob")
            _ = try await alice.enter("open", nick: "Alice")
            let form = """
                <x xmlns='jabber:x:data' type='submit'>\
                <field var='FORM_TYPE'><value>http://jabber.org/protocol/muc#roomconfig</value></field>\
                <field var='muc#roomconfig_whois'><value>anyone</value></field>\
                <field var='muc#roomconfig_roomname'><value>Open plan</value></field></x>
                """
            let configured = try await alice.query(
                "<iq type='set' id='cfg' to='open@\(MUC.service)'><query xmlns='\(MUC.owner)'>\(form)</query></iq>", id: "cfg")
            #expect(configured.type == "result", "\(configured.xmlString())")
            let entry = try await bob.enter("open", nick: "Bob")
            #expect(entry.own.statusCodes == [100, 110])
            try await alice.expectRoomPresence("open", "Bob")
            #expect(entry.others.first?.mucItem?[attribute: "jid"] == "alice@localhost/r", "\(entry.others.map { $0.xmlString() })")
            let info = try await bob.query(
                "<iq type='get' id='ri' to='open@\(MUC.service)'><query xmlns='http://jabber.org/protocol/disco#info'/></iq>", id: "ri")
            let query = info.firstChild("query", namespace: XMLNamespace.discoInfo)
            let features = Set(query?.children("feature").compactMap { $0[attribute: "var"] } ?? [])
            #expect(features.isSuperset(of: [MUC.muc, MUC.occupantID, "muc_nonanonymous", "muc_temporary", "muc_public"]), "\(features)")
            #expect(query?.firstChild("identity")?[attribute: "name"] == "Open plan")

            let bad = try await alice.query(
                """
                <iq type='set' id='bad' to='open@\(MUC.service)'><query xmlns='\(MUC.owner)'><x xmlns='jabber:x:data' type='submit'>\
                <field var='muc#roomconfig_whois'><value>everyone</value></field></x></query></iq>
                """, id: "bad")
            #expect(bad.type == "error" && bad.stanzaErrorCondition == .notAcceptable, "\(bad.xmlString())")
            let notOwner = try await bob.query(
                "<iq type='get' id='o' to='open@\(MUC.service)'><query xmlns='\(MUC.owner)'/></iq>", id: "o")
            #expect(notOwner.stanzaErrorCondition == .forbidden)
        }
    }

    @Test func aTemporaryRoomGoesAwayWithItsLastOccupant() async throws {
        try await MUC.with { server in
            let alice = try await server.im("alice")
            try await MUC.createInstantRoom(alice, "brief", nick: "Alice")
            try await alice.send("<presence to='brief@\(MUC.service)/Alice' type='unavailable'/>")
            try await alice.expectRoomPresence("brief", "Alice", type: "unavailable", codes: [110])
            let info = try await alice.query(
                "<iq type='get' id='gone' to='brief@\(MUC.service)'><query xmlns='http://jabber.org/protocol/disco#info'/></iq>", id: "gone")
            #expect(info.type == "error" && info.stanzaErrorCondition == .itemNotFound, "\(info.xmlString())")
        }
    }

    @Test func onlyTheConfiguredAccountsMayCreateRooms() async throws {
        try await MUC.with(creators: [try JID("alice@localhost")]) { server in
            let bob = try await server.im("bob")
            try await bob.send("<presence to='new@\(MUC.service)/Bob'><x xmlns='\(MUC.muc)'/></presence>")
            let refused = try await bob.expect("presence")
            #expect(refused.type == "error" && refused.stanzaErrorCondition == .notAllowed, "\(refused.xmlString())")
            let alice = try await server.im("alice")
            try await MUC.createInstantRoom(alice, "new", nick: "Alice")
            _ = try await bob.enter("new", nick: "Bob")
        }
    }

    @Test func selfPingTellsWhetherTheClientIsStillInTheRoom() async throws {
        try await MUC.with { server in
            let alice = try await server.im("alice")
            try await MUC.createInstantRoom(alice, "team", nick: "Alice")
            let joined = try await alice.query("<iq type='get' id='sp' to='\(Self.room)/Alice'><ping xmlns='urn:xmpp:ping'/></iq>", id: "sp")
            #expect(joined.type == "result" && joined.from == "\(Self.room)/Alice")
            // XEP-0410 §3.3: the room says it answers self-pings itself.
            let info = try await alice.query("<iq type='get' id='i' to='\(Self.room)'><query xmlns='http://jabber.org/protocol/disco#info'/></iq>", id: "i")
            let features = info.firstChild("query", namespace: XMLNamespace.discoInfo)?.children("feature").compactMap { $0[attribute: "var"] } ?? []
            #expect(features.contains("http://jabber.org/protocol/muc#self-ping-optimization"), "\(features)")
            let bob = try await server.im("bob")
            let stranger = try await bob.query("<iq type='get' id='sp2' to='\(Self.room)/Bob'><ping xmlns='urn:xmpp:ping'/></iq>", id: "sp2")
            #expect(stranger.type == "error" && stranger.stanzaErrorCondition == .notAcceptable)
            #expect(stranger.firstChild("error")?[attribute: "type"] == "cancel", "\(stranger.xmlString())")
            // §6.7: a non-occupant's disco request to an occupant is a bad request.
            for namespace in ["http://jabber.org/protocol/disco#info", "http://jabber.org/protocol/disco#items"] {
                let disco = try await bob.query("<iq type='get' id='d' to='\(Self.room)/Alice'><query xmlns='\(namespace)'/></iq>", id: "d")
                #expect(disco.type == "error" && disco.stanzaErrorCondition == .badRequest, "\(disco.xmlString())")
            }
            try await bob.send("<presence to='\(Self.room)'/>")
            #expect(try await bob.expect("presence").stanzaErrorCondition == .jidMalformed)
        }
    }

    @Test func aRequestToAnotherOccupantIsPassedOnAndItsAnswerComesBack() async throws {
        try await MUC.with { server in
            let (alice, bob, carol) = try await MUCScenarios.threeInTheRoom(server)
            try await bob.send("<iq type='get' id='v1' to='\(Self.room)/Alice'><query xmlns='jabber:iq:version'/></iq>")
            let request = try await alice.expect("iq")
            #expect(request.from == "\(Self.room)/Bob" && request.type == "get" && request.id != "v1", "\(request.xmlString())")
            try await alice.send(
                "<iq type='result' id='\(request.id ?? "")' to='\(Self.room)/Bob'><query xmlns='jabber:iq:version'><name>raw</name><version>1</version></query></iq>")
            let answer = try await bob.expect("iq")
            #expect(answer.type == "result" && answer.id == "v1" && answer.from == "\(Self.room)/Alice", "\(answer.xmlString())")
            #expect(answer.firstChild("query", namespace: "jabber:iq:version")?.firstChild("name")?.text == "raw")
            // Only the session asked can answer, and only once.
            try await carol.send("<iq type='result' id='\(request.id ?? "")' to='\(Self.room)/Bob'/>")
            try await bob.expectNothingPending()
            try await bob.send("<iq type='get' id='v2' to='\(Self.room)/Nobody'><query xmlns='jabber:iq:version'/></iq>")
            #expect(try await bob.expect("iq").stanzaErrorCondition == .itemNotFound)
        }
    }
}

/// XEP-0191 inside a room: blocking an occupant hides its messages from the user only.
@Suite struct MUCBlockingScenarios {
    @Test func blockingAnOccupantHidesItsMessagesWithoutTakingTheUserOutOfTheRoom() async throws {
        try await MUC.with { server in
            let (alice, bob, carol) = try await MUCScenarios.threeInTheRoom(server)
            let block = try await alice.query(
                "<iq type='set' id='b'><block xmlns='urn:xmpp:blocking'><item jid='\(MUCScenarios.room)/Bob'/></block></iq>", id: "b")
            #expect(block.type == "result")
            try await bob.send("<message to='\(MUCScenarios.room)' type='groupchat' id='hidden'><body>hi</body></message>")
            for client in [bob, carol] { try await client.expectMessage(id: "hidden") }
            try await alice.expectNothingPending("a blocked occupant's message does not arrive")
            try await carol.send("<message to='\(MUCScenarios.room)' type='groupchat' id='seen'><body>hi</body></message>")
            for client in [alice, bob, carol] { try await client.expectMessage(id: "seen") }
        }
    }
}

/// Persistent rooms survive a restart: configuration, subject, the owner's affiliation and
/// occupant ids; temporary ones do not.
@Suite struct MUCPersistenceScenarios {
    @Test func aPersistentRoomSurvivesARestartAndATemporaryOneDoesNot() async throws {
        try await MUC.with { server in
            let alice = try await server.im("alice")
            let first = try await alice.enter("keep", nick: "Alice")
            let form = """
                <x xmlns='jabber:x:data' type='submit'>\
                <field var='FORM_TYPE'><value>http://jabber.org/protocol/muc#roomconfig</value></field>\
                <field var='muc#roomconfig_persistentroom'><value>1</value></field>\
                <field var='muc#roomconfig_roomname'><value>Kept</value></field></x>
                """
            let configured = try await alice.query(
                "<iq type='set' id='cfg' to='keep@\(MUC.service)'><query xmlns='\(MUC.owner)'>\(form)</query></iq>", id: "cfg")
            #expect(configured.type == "result", "\(configured.xmlString())")
            try await alice.send("<message to='keep@\(MUC.service)' type='groupchat' id='s'><subject>Still here</subject></message>")
            _ = try await alice.expectMessage(id: "s")
            try await MUC.createInstantRoom(alice, "fleeting", nick: "Alice")
            await alice.close()

            try await server.restart()
            let bob = try await server.im("bob")
            let list = try await bob.query(
                "<iq type='get' id='l' to='\(MUC.service)'><query xmlns='http://jabber.org/protocol/disco#items'/></iq>", id: "l")
            let items = list.firstChild("query", namespace: XMLNamespace.discoItems)?.children("item") ?? []
            #expect(items.map { $0[attribute: "jid"] } == ["keep@\(MUC.service)"] && items.first?[attribute: "name"] == "Kept", "\(list.xmlString())")
            let entry = try await bob.enter("keep", nick: "Bob")
            #expect(entry.own.statusCodes == [110], "an existing room: no 201")
            #expect(entry.subject.firstChild("subject")?.text == "Still here" && entry.subject.from == "keep@\(MUC.service)/Alice")

            let again = try await server.im("alice")
            let back = try await again.enter("keep", nick: "Alice")
            #expect(back.own.mucItem?[attribute: "affiliation"] == "owner" && back.own.mucItem?[attribute: "role"] == "moderator")
            #expect(back.own.occupantID == first.own.occupantID, "the occupant id survives the restart")
        }
    }
}

/// The service's limits, each with the XEP's error and nothing changed for the others.
@Suite struct MUCLimitScenarios {
    @Test func aFullRoomAndOneRoomTooManyAreRefused() async throws {
        try await MUC.with({ $0.maxOccupantsPerRoom = 2; $0.maxRooms = 1 }) { server in
            let alice = try await server.im("alice")
            let bob = try await server.im("bob")
            let carol = try await server.im("carol")
            try await MUC.createInstantRoom(alice, "team", nick: "Alice")
            _ = try await bob.enter("team", nick: "Bob")
            try await alice.expectRoomPresence("team", "Bob")
            try await carol.send("<presence to='\(MUCScenarios.room)/Carol'><x xmlns='\(MUC.muc)'/></presence>")
            let full = try await carol.expect("presence")
            #expect(full.type == "error" && full.stanzaErrorCondition == .serviceUnavailable, "\(full.xmlString())")
            #expect(full.firstChild("error")?[attribute: "type"] == "wait", "§7.2.10: \(full.xmlString())")
            try await carol.send("<presence to='other@\(MUC.service)/Carol'><x xmlns='\(MUC.muc)'/></presence>")
            let tooMany = try await carol.expect("presence")
            #expect(tooMany.type == "error" && tooMany.stanzaErrorCondition == .resourceConstraint, "\(tooMany.xmlString())")
            for client in [alice, bob] { try await client.expectNothingPending() }
        }
    }

    @Test func oneRoomTooManyForAnAccountAndAnOversizedMessageAreRefused() async throws {
        try await MUC.with({ $0.maxRoomsPerAccount = 1; $0.maxMessageBytes = 300 }) { server in
            let alice = try await server.im("alice")
            let bob = try await server.im("bob")
            try await MUC.createInstantRoom(alice, "team", nick: "Alice")
            try await alice.send("<presence to='second@\(MUC.service)/Alice'><x xmlns='\(MUC.muc)'/></presence>")
            #expect(try await alice.expect("presence").stanzaErrorCondition == .resourceConstraint)
            _ = try await bob.enter("team", nick: "Bob")
            try await alice.expectRoomPresence("team", "Bob")
            let long = String(repeating: "x", count: 400)
            try await bob.send("<message to='\(MUCScenarios.room)' type='groupchat' id='big'><body>\(long)</body></message>")
            let refused = try await bob.expect("message")
            #expect(refused.type == "error" && refused.stanzaErrorCondition == .policyViolation, "\(refused.xmlString())")
            try await alice.expectNothingPending("nothing of it reached the room")
            try await bob.send("<message to='\(MUCScenarios.room)' type='groupchat' id='small'><body>ok</body></message>")
            for client in [alice, bob] { try await client.expectMessage(id: "small") }
        }
    }
}

/// XEP-0045 §8.2 and §9.1: moderators kick (307), admins and owners ban (301); a banned
/// account cannot come back; participants may do neither.
@Suite struct MUCModerationScenarios {
    static func admin(_ client: TestClient, _ item: String, id: String) async throws -> XMLElement {
        try await client.query(
            "<iq type='set' id='\(id)' to='\(MUCScenarios.room)'><query xmlns='http://jabber.org/protocol/muc#admin'>\(item)</query></iq>",
            id: id)
    }

    @Test func aModeratorKicksAndAnOwnerBans() async throws {
        try await MUC.with { server in
            let (alice, bob, carol) = try await MUCScenarios.threeInTheRoom(server)
            let refused = try await Self.admin(bob, "<item nick='Carol' role='none'/>", id: "k0")
            #expect(refused.type == "error" && refused.stanzaErrorCondition == .forbidden, "\(refused.xmlString())")

            // Kick: everyone sees 307 with the actor and the reason; the kicked one with 110.
            try await alice.send(
                "<iq type='set' id='k1' to='\(MUCScenarios.room)'><query xmlns='http://jabber.org/protocol/muc#admin'><item nick='Carol' role='none'><reason>spam</reason></item></query></iq>")
            let kicked = try await carol.expectRoomPresence("team", "Carol", type: "unavailable", codes: [110, 307])
            #expect(kicked.mucItem?.firstChild("reason", namespace: MUC.user)?.text == "spam")
            #expect(kicked.mucItem?.firstChild("actor", namespace: MUC.user)?[attribute: "nick"] == "Alice", "\(kicked.xmlString())")
            try await bob.expectRoomPresence("team", "Carol", type: "unavailable", codes: [307])
            try await alice.expectRoomPresence("team", "Carol", type: "unavailable", codes: [307])
            #expect(try await alice.expect("iq").type == "result")
            try await carol.send("<message to='\(MUCScenarios.room)' type='groupchat' id='x'><body>back?</body></message>")
            #expect(try await carol.expect("message").stanzaErrorCondition == .notAcceptable)

            // Ban: 301, and the account cannot enter again.
            try await alice.send(
                "<iq type='set' id='b1' to='\(MUCScenarios.room)'><query xmlns='http://jabber.org/protocol/muc#admin'><item jid='bob@localhost' affiliation='outcast'/></query></iq>")
            let seen = try await alice.expectRoomPresence("team", "Bob", type: "unavailable", codes: [301])
            #expect(seen.mucItem?[attribute: "affiliation"] == "outcast")
            #expect(try await alice.expect("iq").type == "result")
            try await bob.expectRoomPresence("team", "Bob", type: "unavailable", codes: [110, 301])
            try await bob.send("<presence to='\(MUCScenarios.room)/Bob'><x xmlns='\(MUC.muc)'/></presence>")
            let forbidden = try await bob.expect("presence")
            #expect(forbidden.type == "error" && forbidden.stanzaErrorCondition == .forbidden, "\(forbidden.xmlString())")
            let outcasts = try await alice.query(
                "<iq type='get' id='l1' to='\(MUCScenarios.room)'><query xmlns='http://jabber.org/protocol/muc#admin'><item affiliation='outcast'/></query></iq>",
                id: "l1")
            let listed = outcasts.firstChild("query", namespace: "http://jabber.org/protocol/muc#admin")?.children("item")
            #expect(listed?.map { $0[attribute: "jid"] } == ["bob@localhost"], "\(outcasts.xmlString())")
            let participants = try await alice.query(
                "<iq type='get' id='l2' to='\(MUCScenarios.room)'><query xmlns='http://jabber.org/protocol/muc#admin'><item role='moderator'/></query></iq>",
                id: "l2")
            #expect(participants.firstChild("query", namespace: "http://jabber.org/protocol/muc#admin")?.children("item").map { $0[attribute: "nick"] } == ["Alice"])
            let notAdmin = try await carol.query(
                "<iq type='get' id='l3' to='\(MUCScenarios.room)'><query xmlns='http://jabber.org/protocol/muc#admin'><item affiliation='member'/></query></iq>",
                id: "l3")
            #expect(notAdmin.stanzaErrorCondition == .forbidden, "\(notAdmin.xmlString())")
            let lastOwner = try await Self.admin(alice, "<item jid='alice@localhost' affiliation='member'/>", id: "o")
            #expect(lastOwner.stanzaErrorCondition == .conflict, "\(lastOwner.xmlString())")
        }
    }
}

/// §7.2.5–7.2.6: password-protected and members-only rooms.
@Suite struct MUCAccessScenarios {
    static func configure(_ client: TestClient, _ fields: String) async throws {
        let form = "<x xmlns='jabber:x:data' type='submit'>\(fields)</x>"
        let reply = try await client.query(
            "<iq type='set' id='cfg' to='\(MUCScenarios.room)'><query xmlns='\(MUC.owner)'>\(form)</query></iq>", id: "cfg")
        #expect(reply.type == "result", "\(reply.xmlString())")
    }

    /// As Prosody reads the form: a secret alone sets a password, an empty one removes it.
    @Test func aRoomSecretAloneSetsThePassword() async throws {
        try await MUC.with { server in
            let alice = try await server.im("alice")
            let bob = try await server.im("bob")
            _ = try await alice.enter("team", nick: "Alice")
            try await Self.configure(alice, "<field var='muc#roomconfig_roomsecret'><value>s3cret</value></field>")
            try await bob.send("<presence to='\(MUCScenarios.room)/Bob'><x xmlns='\(MUC.muc)'/></presence>")
            #expect(try await bob.expect("presence").stanzaErrorCondition == .notAuthorized)
            try await Self.configure(alice, "<field var='muc#roomconfig_roomname'><value>Team</value></field>")
            try await alice.expectRoomStatus([104])
            try await bob.send("<presence to='\(MUCScenarios.room)/Bob'><x xmlns='\(MUC.muc)'/></presence>")
            #expect(try await bob.expect("presence").stanzaErrorCondition == .notAuthorized, "another change keeps the password")
            try await Self.configure(alice, "<field var='muc#roomconfig_roomsecret'><value></value></field>")
            try await alice.expectRoomStatus([104])
            #expect(try await bob.enter("team", nick: "Bob").own.statusCodes == [110])
        }
    }

    @Test func aPasswordIsNeededAndThenMembershipIs() async throws {
        try await MUC.with { server in
            let alice = try await server.im("alice")
            let bob = try await server.im("bob")
            _ = try await alice.enter("team", nick: "Alice")
            try await Self.configure(
                alice,
                "<field var='muc#roomconfig_passwordprotectedroom'><value>1</value></field><field var='muc#roomconfig_roomsecret'><value>s3cret</value></field>")
            try await bob.send("<presence to='\(MUCScenarios.room)/Bob'><x xmlns='\(MUC.muc)'/></presence>")
            #expect(try await bob.expect("presence").stanzaErrorCondition == .notAuthorized)
            try await bob.send("<presence to='\(MUCScenarios.room)/Bob'><x xmlns='\(MUC.muc)'><password>wrong</password></x></presence>")
            #expect(try await bob.expect("presence").stanzaErrorCondition == .notAuthorized)
            try await bob.send("<presence to='\(MUCScenarios.room)/Bob'><x xmlns='\(MUC.muc)'><password>s3cret</password></x></presence>")
            #expect(try await bob.enterReplies().own.statusCodes == [110])
            try await alice.expectRoomPresence("team", "Bob")
            let info = try await bob.query(
                "<iq type='get' id='ri' to='\(MUCScenarios.room)'><query xmlns='http://jabber.org/protocol/disco#info'/></iq>", id: "ri")
            let features = info.firstChild("query", namespace: XMLNamespace.discoInfo)?.children("feature").compactMap { $0[attribute: "var"] } ?? []
            #expect(features.contains("muc_passwordprotected") && features.contains("muc_open"), "\(features)")

            // Members only: Bob, in but no member, is removed (322); Carol is turned away
            // until made a member.
            try await Self.configure(
                alice, "<field var='muc#roomconfig_passwordprotectedroom'><value>0</value></field><field var='muc#roomconfig_membersonly'><value>1</value></field>")
            try await bob.expectRoomPresence("team", "Bob", type: "unavailable", codes: [110, 322])
            try await alice.expectRoomPresence("team", "Bob", type: "unavailable", codes: [322])
            try await alice.expectRoomStatus([104])
            let carol = try await server.im("carol")
            try await carol.send("<presence to='\(MUCScenarios.room)/Carol'><x xmlns='\(MUC.muc)'/></presence>")
            #expect(try await carol.expect("presence").stanzaErrorCondition == .registrationRequired)
            try await alice.sendAdmin("<item jid='carol@localhost' affiliation='member'/>", id: "m")
            #expect(try await alice.expect("message").mucItem?[attribute: "jid"] == "carol@localhost", "the owner sees the new member")
            try await alice.expectResult("m")
            #expect(try await carol.expect("message").statusCodes == [101], "told of the membership while away")
            #expect(try await carol.enter("team", nick: "Carol").own.mucItem?[attribute: "affiliation"] == "member")
        }
    }
}

/// §10.9: an owner destroys a room; every occupant is told why and where the talk goes on
/// (the alternate venue and its password), and a persistent room is gone from storage too.
@Suite struct MUCDestructionScenarios {
    @Test func anOwnerDestroysAPersistentRoom() async throws {
        try await MUC.with { server in
            let (alice, bob, carol) = try await MUCScenarios.threeInTheRoom(server)
            try await MUCAccessScenarios.configure(alice, "<field var='muc#roomconfig_persistentroom'><value>1</value></field>")
            for client in [alice, bob, carol] { try await client.expectRoomStatus([104]) }
            let notOwner = try await bob.query(
                "<iq type='set' id='d0' to='\(MUCScenarios.room)'><query xmlns='\(MUC.owner)'><destroy/></query></iq>", id: "d0")
            #expect(notOwner.stanzaErrorCondition == .forbidden)
            try await alice.send(
                "<iq type='set' id='d1' to='\(MUCScenarios.room)'><query xmlns='\(MUC.owner)'><destroy jid='next@\(MUC.service)'><reason>done</reason><password>onward</password></destroy></query></iq>")
            for (client, nick) in [(alice, "Alice"), (bob, "Bob"), (carol, "Carol")] {
                let gone = try await client.expectRoomPresence("team", nick, type: "unavailable", codes: [110])
                // §10.9 example 204: nothing is left of the occupant's standing.
                #expect(gone.mucItem?[attribute: "affiliation"] == "none" && gone.mucItem?[attribute: "role"] == "none", "\(gone.xmlString())")
                let destroy = gone.firstChild("x", namespace: MUC.user)?.firstChild("destroy", namespace: MUC.user)
                #expect(destroy?.firstChild("reason", namespace: MUC.user)?.text == "done", "\(gone.xmlString())")
                #expect(destroy?[attribute: "jid"] == "next@\(MUC.service)" && destroy?.firstChild("password", namespace: MUC.user)?.text == "onward")
            }
            // §10.9: the owner's result comes after the occupants were told.
            #expect(try await alice.expect("iq").type == "result")
            try await bob.send("<message to='\(MUCScenarios.room)' type='groupchat' id='x'><body>hello?</body></message>")
            #expect(try await bob.expect("message").stanzaErrorCondition == .itemNotFound)
            await alice.close()
            try await server.restart()
            let again = try await server.im("carol", "later")
            let info = try await again.query(
                "<iq type='get' id='i' to='\(MUCScenarios.room)'><query xmlns='http://jabber.org/protocol/disco#info'/></iq>", id: "i")
            #expect(info.stanzaErrorCondition == .itemNotFound, "a destroyed persistent room does not come back")
        }
    }
}
