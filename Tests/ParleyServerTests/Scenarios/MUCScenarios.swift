import Foundation
import ParleyCore
@testable import ParleyServer
import Testing

/// XEP-0045 with three clients: the service's disco, creating an instant room, entering it,
/// nickname conflicts, groupchat, the subject, private messages and XEP-0421 occupant ids.
@Suite struct MUCScenarios {
    static let room = "team@conference.localhost"

    @Test func theServiceIsListedAndDescribesItself() async throws {
        try await MUC.with { server in
            let alice = try await server.im("alice")
            let items = try await alice.query(
                "<iq type='get' id='i' to='localhost'><query xmlns='http://jabber.org/protocol/disco#items'/></iq>", id: "i")
            let listed = items.firstChild("query", namespace: XMLNamespace.discoItems)?.children("item").compactMap { $0[attribute: "jid"] }
            #expect(listed == [MUC.service], "\(items.xmlString())")
            let info = try await alice.query(
                "<iq type='get' id='d' to='\(MUC.service)'><query xmlns='http://jabber.org/protocol/disco#info'/></iq>", id: "d")
            let query = try #require(info.firstChild("query", namespace: XMLNamespace.discoInfo), "\(info.xmlString())")
            let identity = query.firstChild("identity")
            #expect(identity?[attribute: "category"] == "conference" && identity?[attribute: "type"] == "text")
            #expect(query.children("feature").contains { $0[attribute: "var"] == MUC.muc })
            // XEP-0030 §3.2: nodes the service and its rooms do not have.
            try await MUC.createInstantRoom(alice, "team", nick: "Alice")
            for (id, to) in [("n1", MUC.service), ("n2", Self.room)] {
                let node = try await alice.query(
                    "<iq type='get' id='\(id)' to='\(to)'><query xmlns='http://jabber.org/protocol/disco#info' node='urn:example:none'/></iq>", id: id)
                #expect(node.stanzaErrorCondition == .itemNotFound, "\(node.xmlString())")
            }
        }
    }

    @Test func anInstantRoomIsCreatedLockedUntilConfiguredThenOthersEnter() async throws {
        try await MUC.with { server in
            let alice = try await server.im("alice")
            let bob = try await server.im("bob")
            let carol = try await server.im("carol")
            let created = try await alice.enter("team", nick: "Alice")
            #expect(created.others.isEmpty)
            #expect(created.own.from == "\(Self.room)/Alice" && created.own.statusCodes == [110, 201], "\(created.own.xmlString())")
            #expect(created.own.mucItem?[attribute: "affiliation"] == "owner" && created.own.mucItem?[attribute: "role"] == "moderator")
            #expect(created.subject.from == Self.room && created.subject.firstChild("subject")?.text == "")

            // §10.1.1: nobody else enters a locked room.
            try await bob.send("<presence to='\(Self.room)/Bob'><x xmlns='\(MUC.muc)'/></presence>")
            let locked = try await bob.expect("presence")
            #expect(locked.type == "error" && locked.stanzaErrorCondition == .itemNotFound, "\(locked.xmlString())")

            let instant = try await alice.query(
                "<iq type='set' id='c' to='\(Self.room)'><query xmlns='\(MUC.owner)'><x xmlns='jabber:x:data' type='submit'/></query></iq>", id: "c")
            #expect(instant.type == "result", "\(instant.xmlString())")

            let entered = try await bob.enter("team", nick: "Bob")
            #expect(entered.others.map(\.from) == ["\(Self.room)/Alice"])
            #expect(entered.own.statusCodes == [110] && entered.own.mucItem?[attribute: "role"] == "participant")
            // Semi-anonymous: a participant does not see real JIDs; the moderator does.
            #expect(entered.others.first?.mucItem?[attribute: "jid"] == nil)
            let bobArrives = try await alice.expectRoomPresence("team", "Bob")
            #expect(bobArrives.mucItem?[attribute: "jid"] == "bob@localhost/r", "\(bobArrives.xmlString())")

            // §7.2.9: a nickname in use by another account.
            try await carol.send("<presence to='\(Self.room)/Bob'><x xmlns='\(MUC.muc)'/></presence>")
            let conflict = try await carol.expect("presence")
            #expect(conflict.type == "error" && conflict.stanzaErrorCondition == .conflict && conflict.from == "\(Self.room)/Bob")
            try await alice.expectNothingPending()
            try await bob.expectNothingPending()

            let list = try await carol.query(
                "<iq type='get' id='l' to='\(MUC.service)'><query xmlns='http://jabber.org/protocol/disco#items'/></iq>", id: "l")
            #expect(list.firstChild("query", namespace: XMLNamespace.discoItems)?.children("item").map { $0[attribute: "jid"] } == [Self.room])
        }
    }

    @Test func groupchatReachesEveryOccupantWithARoomStanzaIDAndOccupantID() async throws {
        try await MUC.with { server in
            let (alice, bob, carol) = try await Self.threeInTheRoom(server)
            try await bob.send("<message to='\(Self.room)' type='groupchat' id='g1'><body>hello room</body></message>")
            var stanzaIDs: Set<String> = []
            for client in [alice, bob, carol] {
                let message = try await client.expect("message")
                #expect(message.from == "\(Self.room)/Bob" && message.type == "groupchat" && message.id == "g1", "\(message.xmlString())")
                #expect(message.firstChild("body")?.text == "hello room")
                let stanzaID = message.firstChild("stanza-id", namespace: XMLNamespace.stanzaID)
                #expect(stanzaID?[attribute: "by"] == Self.room)
                stanzaIDs.insert(stanzaID?[attribute: "id"] ?? "")
                #expect(message.occupantID != nil)
            }
            #expect(stanzaIDs.count == 1, "one room stanza-id for every copy")

            // A stranger's groupchat is refused (§7.4), and reaches nobody.
            let stranger = try await server.im("carol", "other", available: false)
            try await stranger.send("<message to='\(Self.room)' type='groupchat' id='g2'><body>let me in</body></message>")
            let refused = try await stranger.expect("message")
            #expect(refused.type == "error" && refused.stanzaErrorCondition == .notAcceptable, "\(refused.xmlString())")
            for client in [alice, bob, carol] { try await client.expectNothingPending() }
        }
    }

    @Test func theSubjectIsChangedByModeratorsAndSentLastOnEntry() async throws {
        try await MUC.with { server in
            let (alice, bob, carol) = try await Self.threeInTheRoom(server)
            try await bob.send("<message to='\(Self.room)' type='groupchat' id='s1'><subject>mine</subject></message>")
            let forbidden = try await bob.expect("message")
            #expect(forbidden.type == "error" && forbidden.stanzaErrorCondition == .forbidden, "\(forbidden.xmlString())")
            try await alice.send("<message to='\(Self.room)' type='groupchat' id='s2'><subject>Plans</subject></message>")
            for client in [alice, bob, carol] {
                let subject = try await client.expect("message")
                #expect(subject.from == "\(Self.room)/Alice" && subject.firstChild("subject")?.text == "Plans")
            }
            // §8.1: a subject with a thread (or a body) is a message that has a subject, not a
            // change of it, so a participant may send one and the room's subject stays.
            try await bob.send("<message to='\(Self.room)' type='groupchat' id='s3'><subject>Re: lunch</subject><thread>t1</thread></message>")
            for client in [alice, bob, carol] {
                let message = try await client.expect("message")
                #expect(message.id == "s3" && message.from == "\(Self.room)/Bob" && message.type == "groupchat", "\(message.xmlString())")
            }
            let phone = try await server.im("carol", "phone", available: false)
            let entry = try await phone.enter("team", nick: "Carol2")
            #expect(entry.subject.from == "\(Self.room)/Alice" && entry.subject.firstChild("subject")?.text == "Plans")
        }
    }

    @Test func privateMessagesGoBetweenOccupantsOnly() async throws {
        try await MUC.with { server in
            let (alice, bob, carol) = try await Self.threeInTheRoom(server)
            try await bob.send("<message to='\(Self.room)/Alice' type='chat' id='p1'><body>psst</body></message>")
            let pm = try await alice.expect("message")
            #expect(pm.from == "\(Self.room)/Bob" && pm.type == "chat" && pm.firstChild("body")?.text == "psst", "\(pm.xmlString())")
            #expect(pm.firstChild("x", namespace: MUC.user) != nil && pm.occupantID != nil)
            try await carol.expectNothingPending()
            try await bob.send("<message to='\(Self.room)/Nobody' type='chat' id='p2'><body>?</body></message>")
            #expect(try await bob.expect("message").stanzaErrorCondition == .itemNotFound)
            let stranger = try await server.im("carol", "other", available: false)
            try await stranger.send("<message to='\(Self.room)/Alice' type='chat' id='p3'><body>hi</body></message>")
            #expect(try await stranger.expect("message").stanzaErrorCondition == .notAcceptable)
            try await alice.expectNothingPending()
        }
    }

    /// Alice creates `team` (instant), then Bob and Carol enter; everyone has read everything.
    static func threeInTheRoom(_ server: TestServer) async throws -> (TestClient, TestClient, TestClient) {
        let alice = try await server.im("alice")
        let bob = try await server.im("bob")
        let carol = try await server.im("carol")
        try await MUC.createInstantRoom(alice, "team", nick: "Alice")
        _ = try await bob.enter("team", nick: "Bob")
        try await alice.expectRoomPresence("team", "Bob")
        _ = try await carol.enter("team", nick: "Carol")
        try await alice.expectRoomPresence("team", "Carol")
        try await bob.expectRoomPresence("team", "Carol")
        return (alice, bob, carol)
    }
}

/// §7.2.14: the discussion history a newcomer gets, as much as it asks for.
@Suite struct MUCHistoryScenarios {
    @Test func newcomersGetTheRecentHistoryWithDelayAsMuchAsTheyAskFor() async throws {
        try await MUC.with { server in
            let alice = try await server.im("alice")
            try await MUC.createInstantRoom(alice, "team", nick: "Alice")
            for id in ["h1", "h2", "h3"] {
                try await alice.send("<message to='\(MUCScenarios.room)' type='groupchat' id='\(id)'><body>\(id)</body></message>")
                try await alice.expectMessage(id: id)
            }
            try await alice.send("<message to='\(MUCScenarios.room)' type='groupchat' id='t'><subject>Topic</subject></message>")
            try await alice.expectMessage(id: "t")

            let bob = try await server.im("bob")
            let all = try await bob.enter("team", nick: "Bob")
            #expect(all.history.map(\.id) == ["h1", "h2", "h3"], "\(all.history.map { $0.xmlString() })")
            for message in all.history {
                let delay = message.firstChild("delay", namespace: IM.delay)
                #expect(delay?[attribute: "from"] == MUCScenarios.room && delay?[attribute: "stamp"] != nil, "\(message.xmlString())")
                #expect(message.from == "\(MUCScenarios.room)/Alice" && message.to == "bob@localhost/r")
                #expect(message.firstChild("stanza-id", namespace: XMLNamespace.stanzaID) != nil)
            }
            #expect(all.subject.firstChild("subject")?.text == "Topic")

            let carol = try await server.im("carol")
            let last = try await carol.enter("team", nick: "Carol", extra: "")
            #expect(last.history.count == 3)
            let phone = try await server.im("carol", "phone", available: false)
            try await phone.send(
                "<presence to='\(MUCScenarios.room)/Carol'><x xmlns='\(MUC.muc)'><history maxstanzas='1'/></x></presence>")
            let one = try await phone.enterReplies()
            #expect(one.history.map(\.id) == ["h3"])
            let laptop = try await server.im("carol", "laptop", available: false)
            try await laptop.send(
                "<presence to='\(MUCScenarios.room)/Carol'><x xmlns='\(MUC.muc)'><history maxstanzas='0'/></x></presence>")
            #expect(try await laptop.enterReplies().history.isEmpty)
        }
    }
}

extension MUCHistoryScenarios {
    /// §7.2.14's other limits: `maxchars` counts whole stanzas (each message here is over
    /// 1,000 characters and under 1,500), `since` keeps what came after a moment, `seconds`
    /// what came in the last that many seconds; all of them apply together.
    @Test func maxcharsSecondsAndSinceEachLimitTheHistory() async throws {
        try await MUC.with { server in
            let alice = try await server.im("alice")
            try await MUC.createInstantRoom(alice, "team", nick: "Alice")
            let body = String(repeating: "x", count: 1000)
            func say(_ id: String) async throws {
                try await alice.send("<message to='\(MUCScenarios.room)' type='groupchat' id='\(id)'><body>\(body)</body></message>")
                try await alice.expectMessage(id: id)
            }
            try await say("h1")
            try await Task.sleep(for: .milliseconds(1500))
            let between = Date()
            try await Task.sleep(for: .milliseconds(2500))
            try await say("h2")
            try await say("h3")

            // The attributes are made once the session is up, right before it enters.
            func history(_ resource: String, _ attributes: @autoclosure () -> String) async throws -> [String?] {
                let bob = try await server.im("bob", resource, available: false)
                try await bob.send(
                    "<presence to='\(MUCScenarios.room)/Bob'><x xmlns='\(MUC.muc)'><history \(attributes())/></x></presence>")
                return try await bob.enterReplies().history.map(\.id)
            }
            #expect(try await history("c1", "maxchars='2000'") == ["h3"])
            #expect(try await history("c2", "maxchars='3200'") == ["h2", "h3"])
            #expect(try await history("c3", "maxchars='0'") == [])
            #expect(try await history("c4", "maxchars='100000'") == ["h1", "h2", "h3"])

            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            #expect(try await history("s1", "since='\(formatter.string(from: between))'") == ["h2", "h3"])
            #expect(try await history("s2", "since='\(formatter.string(from: between.addingTimeInterval(-3600)))'") == ["h1", "h2", "h3"])
            #expect(try await history("s3", "since='\(formatter.string(from: Date().addingTimeInterval(60)))'") == [])

            // h1 came more than this many seconds ago, h2 and h3 fewer (with over a second to
            // spare for the join itself).
            #expect(try await history("t1", "seconds='\(Int(Date().timeIntervalSince(between)))'") == ["h2", "h3"])
            #expect(try await history("t2", "seconds='3600'") == ["h1", "h2", "h3"])
            #expect(try await history("t3", "seconds='3600' maxstanzas='1'") == ["h3"])
            #expect(try await history("t4", "since='\(formatter.string(from: between))' maxchars='2000'") == ["h3"])
        }
    }
}

/// §7.8.2: mediated invitations and declines, relayed by the room.
@Suite struct MUCInvitationScenarios {
    @Test func anOccupantInvitesTheInviteeDeclinesAndAnOfflineInviteeFindsItLater() async throws {
        try await MUC.with { server in
            let alice = try await server.im("alice")
            let bob = try await server.im("bob")
            try await MUC.createInstantRoom(alice, "team", nick: "Alice")
            try await alice.send(
                """
                <message to='\(MUCScenarios.room)' id='inv'><x xmlns='\(MUC.user)'>\
                <invite to='bob@localhost'><reason>standup</reason></invite><invite to='carol@localhost'/></x></message>
                """)
            let invitation = try await bob.expect("message")
            let invite = invitation.firstChild("x", namespace: MUC.user)?.firstChild("invite", namespace: MUC.user)
            #expect(invitation.from == MUCScenarios.room && invite?[attribute: "from"] == "alice@localhost", "\(invitation.xmlString())")
            #expect(invite?.firstChild("reason", namespace: MUC.user)?.text == "standup")

            try await bob.send(
                """
                <message to='\(MUCScenarios.room)' id='no'><x xmlns='\(MUC.user)'>\
                <decline to='alice@localhost'><reason>busy</reason></decline></x></message>
                """)
            let declined = try await alice.expect("message")
            let decline = declined.firstChild("x", namespace: MUC.user)?.firstChild("decline", namespace: MUC.user)
            #expect(declined.from == MUCScenarios.room && decline?[attribute: "from"] == "bob@localhost", "\(declined.xmlString())")

            // Carol was offline: the invitation waits in offline storage.
            await server.running.offline.writer.waitUntilIdle(deadline: ContinuousClock.now + .seconds(5))
            let carol = try await server.im("carol")
            let stored = try await carol.expect("message")
            #expect(stored.from == MUCScenarios.room && stored.firstChild("x", namespace: MUC.user)?.firstChild("invite", namespace: MUC.user) != nil)

            // Only occupants invite.
            try await carol.send(
                "<message to='\(MUCScenarios.room)' id='bad'><x xmlns='\(MUC.user)'><invite to='bob@localhost'/></x></message>")
            #expect(try await carol.expect("message").stanzaErrorCondition == .notAcceptable)
            try await alice.send("<message to='\(MUCScenarios.room)' id='bad2'><x xmlns='\(MUC.user)'><invite/></x></message>")
            #expect(try await alice.expect("message").stanzaErrorCondition == .jidMalformed)
            try await bob.expectNothingPending()
        }
    }
}
