import Foundation
import ParleyClient
import ParleyCore
import ParleyServer
import Testing

/// ParleyClient's group chat (XEP-0045) against parleyd's MUC service at
/// conference.localhost, with three and more clients: what each occupant's application
/// hears, and each refusal as a `ClientError.refused` with the room's condition.
@Suite struct RoomScenarioTests {
    static let team = try! JID("team@conference.localhost")

    @Test func joinTalkPrivateMessagesSubjectAndConversationList() async throws {
        try await withServer { server in
            for user in ["alice", "bob", "carol"] { try await server.createAccount(user) }
            let (alice, aliceEvents) = try server.client("alice")
            let (bob, bobEvents) = try server.client("bob")
            let (carol, carolEvents) = try server.client("carol")
            defer { Task { for client in [alice, bob, carol] { await client.disconnect() } } }
            for client in [alice, bob, carol] { try await client.connect() }

            // Alice creates the room (instant, §10.1.2): she is its owner and moderator.
            let created = try await alice.join(Self.team, nick: "Alice")
            #expect(created.created && created.nick == "Alice")
            #expect(created.occupants.map(\.nick) == ["Alice"])
            #expect(created.occupants.first?.affiliation == .owner && created.occupants.first?.role == .moderator)

            let bobJoined = try await bob.join(Self.team, nick: "Bob")
            #expect(!bobJoined.created && bobJoined.occupants.map(\.nick) == ["Alice", "Bob"], "\(bobJoined)")
            #expect(bobJoined.occupants.first { $0.nick == "Bob" }?.role == .participant)
            try await Rooms.next(aliceEvents, "Bob joining") {
                if case .occupantJoined(Self.team, let occupant) = $0 { occupant.nick == "Bob" && occupant.occupantID != nil } else { false }
            }
            try await carol.join(Self.team, nick: "Carol")
            try await Rooms.next(bobEvents, "Carol joining") { if case .occupantJoined(Self.team, let o) = $0 { o.nick == "Carol" } else { false } }

            // The same nickname again: the room's conflict, as a refusal.
            try await server.createAccount("dave")
            let (dave, _) = try server.client("dave")
            defer { Task { await dave.disconnect() } }
            try await dave.connect()
            let conflict = await Rooms.refusal { try await dave.join(Self.team, nick: "Bob") }
            #expect(conflict?.condition == .conflict, "\(String(describing: conflict))")
            #expect(await dave.isInRoom(Self.team) == false)
            #expect(try await dave.conversations().isEmpty, "a refused join leaves no room in the conversation list")

            // A groupchat message reaches everyone with the sender's nickname and occupant id;
            // Bob's client sees itself mentioned; Alice hears of it as sent, not as news.
            let id = try await alice.sendRoomMessage(to: Self.team, body: "hello bob and carol")
            let atBob = try await Rooms.message(bobEvents, "hello bob and carol")
            #expect(atBob.nick == "Alice" && atBob.mentionsMe && !atBob.isOwn && !atBob.isHistory && atBob.occupantID != nil, "\(atBob)")
            #expect(atBob.id == id && atBob.stanzaID != nil)
            let atCarol = try await Rooms.message(carolEvents, "hello bob and carol")
            #expect(atCarol.mentionsMe && atCarol.occupantID == atBob.occupantID)
            try await aliceEvents.next("the room's echo of Alice's message") { $0 == .sent(messageID: id) }
            #expect(Rooms.bodies(aliceEvents, in: Self.team).isEmpty)
            let stored = try await alice.history(with: Self.team)
            #expect(stored.map(\.body) == ["hello bob and carol"] && stored.first?.state == .sent && stored.first?.nick == "Alice")

            // A private message goes to Carol only.
            try await bob.sendPrivateMessage(to: "Carol", in: Self.team, body: "psst, carol")
            let pm = try await Rooms.next(carolEvents, "Bob's private message") {
                if case .privateMessage(let m) = $0 { m.body == "psst, carol" } else { false }
            }
            #expect(pm == .privateMessage(RoomMessage(room: Self.team, nick: "Bob", body: "psst, carol", id: pmID(pm), occupantID: pmOccupant(pm))))
            try await bob.settle()
            try await alice.settle()
            #expect(!aliceEvents.all.contains { if case .room(.privateMessage) = $0 { true } else { false } })

            // The subject: the moderator may change it; a participant may not (the default).
            try await alice.setSubject(of: Self.team, to: "Friday plans")
            try await Rooms.next(bobEvents, "the new subject") { $0 == .subjectChanged(room: Self.team, subject: "Friday plans", by: "Alice") }
            let forbidden = await Rooms.refusal { try await bob.setSubject(of: Self.team, to: "my plans") }
            #expect(forbidden?.condition == .forbidden && forbidden?.text != nil, "\(String(describing: forbidden))")
            #expect(await bob.joinedRooms().first?.subject == "Friday plans")

            // The room sits in the conversation list next to one-to-one chats, with its unread count.
            let conversations = try await bob.conversations()
            let room = conversations.first { $0.peer == Self.team }
            #expect(room?.isRoom == true && room?.unreadCount == 1 && room?.lastMessage?.nick == "Alice", "\(conversations)")
            try await bob.markRead(Self.team)
            #expect(try await bob.conversations().first { $0.peer == Self.team }?.unreadCount == 0)

            // The occupant list, with roles and affiliations; Alice (a moderator) sees real JIDs.
            let seenByAlice = try await alice.occupants(of: Self.team)
            #expect(seenByAlice.map(\.nick) == ["Alice", "Bob", "Carol"])
            #expect(seenByAlice.first { $0.nick == "Bob" }?.realJID?.bare == jid("bob"))
            #expect(try await carol.occupants(of: Self.team).first { $0.nick == "Bob" }?.realJID == nil)

            // Our availability reaches the rooms we are in (§7.7).
            await bob.setStatus(.away, text: "lunch")
            try await Rooms.next(aliceEvents, "Bob away") {
                if case .occupantChanged(Self.team, let o) = $0 { o.nick == "Bob" && o.show == .away && o.status == "lunch" } else { false }
            }

            // Leaving: Carol is out; the others see her go.
            try await carol.leave(Self.team)
            try await Rooms.next(carolEvents, "Carol's leave") { $0 == .left(room: Self.team) }
            try await Rooms.next(bobEvents, "Carol leaving") {
                if case .occupantLeft(Self.team, let o, nil) = $0 { o.nick == "Carol" } else { false }
            }
            #expect(await carol.isInRoom(Self.team) == false)
            await #expect(throws: ClientError.notInRoom(Self.team)) { try await carol.sendRoomMessage(to: Self.team, body: "hello?") }
        }
    }

    @Test func invitationsKickBanConfigureAndDestroy() async throws {
        try await withServer { server in
            for user in ["alice", "bob", "carol", "dave"] { try await server.createAccount(user) }
            let clients = try ["alice", "bob", "carol", "dave"].map { try server.client($0) }
            defer { Task { for (client, _) in clients { await client.disconnect() } } }
            for (client, _) in clients { try await client.connect() }
            let (alice, aliceEvents) = clients[0]
            let (bob, bobEvents) = clients[1]
            let (carol, carolEvents) = clients[2]
            let (dave, daveEvents) = clients[3]
            try await alice.join(Self.team, nick: "Alice")
            try await bob.join(Self.team, nick: "Bob")
            try await carol.join(Self.team, nick: "Carol")

            // Mediated invitation (§7.8.2), declined: the room tells Alice.
            try await alice.invite(jid("dave"), to: Self.team, reason: "we plan the party")
            let invited = try await Rooms.next(daveEvents, "the invitation") { if case .invited = $0 { true } else { false } }
            guard case .invited(let invitation) = invited else { return }
            #expect(invitation == RoomInvitation(room: Self.team, from: jid("alice"), reason: "we plan the party", isDirect: false))
            await dave.decline(invitation, reason: "busy")
            try await Rooms.next(aliceEvents, "Dave's decline") {
                $0 == .invitationDeclined(room: Self.team, by: jid("dave"), reason: "busy")
            }
            // Nothing of it became a one-to-one conversation.
            #expect(try await dave.conversations().allSatisfy { $0.peer != Self.team || $0.isRoom })

            // Direct invitation (XEP-0249), accepted.
            try await alice.invite(jid("dave"), to: Self.team, direct: true)
            let direct = try await Rooms.next(daveEvents, "the direct invitation") { if case .invited(let i) = $0 { i.isDirect } else { false } }
            guard case .invited(let directInvitation) = direct else { return }
            #expect(directInvitation.room == Self.team && directInvitation.from == jid("alice"))
            try await dave.accept(directInvitation, nick: "Dave")
            #expect(await dave.isInRoom(Self.team))

            // A participant may not kick; the moderator may, with a reason (307).
            let notModerator = await Rooms.refusal { try await bob.kick("Carol", from: Self.team) }
            #expect(notModerator?.condition == .forbidden, "\(String(describing: notModerator))")
            try await alice.kick("Carol", from: Self.team, reason: "too loud")
            try await Rooms.next(carolEvents, "Carol kicked") { $0 == .removed(room: Self.team, .kicked(by: "Alice", reason: "too loud")) }
            try await Rooms.next(bobEvents, "Carol's kick, seen by Bob") {
                if case .occupantLeft(Self.team, let o, .kicked(_, "too loud")) = $0 { o.nick == "Carol" } else { false }
            }
            #expect(await carol.isInRoom(Self.team) == false)
            // Kicked is not banned: she may come back.
            try await carol.join(Self.team, nick: "Carol")

            // A ban (301) removes Dave, and keeps him out.
            try await alice.ban(jid("dave"), from: Self.team, reason: "spam")
            try await Rooms.next(daveEvents, "Dave banned") { $0 == .removed(room: Self.team, .banned(by: "Alice", reason: "spam")) }
            let banned = await Rooms.refusal { try await dave.join(Self.team, nick: "Dave") }
            #expect(banned?.condition == .forbidden, "\(String(describing: banned))")
            #expect(try await alice.affiliations(.outcast, in: Self.team) == [jid("dave")])

            // Voice and moderation: Bob made a moderator, announced to all.
            try await alice.setAffiliation(.admin, of: jid("bob"), in: Self.team)
            try await Rooms.next(carolEvents, "Bob's new role") {
                if case .occupantChanged(Self.team, let o) = $0 { o.nick == "Bob" && o.role == .moderator && o.affiliation == .admin } else { false }
            }

            // Configuration (§10.2): only the owner; the name shows in the room list.
            let fields = try await alice.roomConfiguration(Self.team)
            #expect(fields.contains { $0.name == "muc#roomconfig_roomname" }, "\(fields)")
            let notOwner = await Rooms.refusal { _ = try await carol.roomConfiguration(Self.team) }
            #expect(notOwner?.condition == .forbidden)
            try await alice.configureRoom(Self.team, ["muc#roomconfig_roomname": ["The team"]])
            let listed = try await carol.publicRooms()
            #expect(listed == [PublicRoom(jid: Self.team, name: "The team")], "\(listed)")

            // Destruction (§10.9): everyone is sent out with the reason.
            let denied = await Rooms.refusal { try await bob.destroyRoom(Self.team) }
            #expect(denied?.condition == .forbidden)
            try await alice.destroyRoom(Self.team, reason: "party is over", alternateVenue: try JID("party@conference.localhost"))
            for events in [bobEvents, carolEvents, aliceEvents] {
                try await Rooms.next(events, "the room destroyed") {
                    if case .removed(Self.team, .destroyed(let reason, _)) = $0 { reason == "party is over" } else { false }
                }
            }
            #expect(await alice.joinedRooms().isEmpty)
            #expect(await bob.joinedRooms().isEmpty)
        }
    }

    @Test func aRoomRefusesWithItsConditionAndText() async throws {
        try await withServer { server in
            for user in ["alice", "bob"] { try await server.createAccount(user) }
            let (alice, _) = try server.client("alice")
            let (bob, _) = try server.client("bob")
            defer { Task { await alice.disconnect(); await bob.disconnect() } }
            try await alice.connect()
            try await bob.connect()
            try await alice.join(Self.team, nick: "Alice")
            try await alice.configureRoom(Self.team, ["muc#roomconfig_passwordprotectedroom": ["1"], "muc#roomconfig_roomsecret": ["s3cret"]])
            let wrongPassword = await Rooms.refusal { try await bob.join(Self.team, nick: "Bob", password: "guess") }
            #expect(wrongPassword?.condition == .notAuthorized && wrongPassword?.text?.isEmpty == false, "\(String(describing: wrongPassword))")
            #expect(ClientError.refused(wrongPassword!).description.contains("not-authorized"))
            try await bob.join(Self.team, nick: "Bob", password: "s3cret")
            // Bad arguments never reach the network.
            await #expect(throws: ClientError.self) { try await bob.join(try JID("conference.localhost"), nick: "Bob") }
            await #expect(throws: ClientError.self) { try await bob.join(Self.team, nick: "") }
        }
    }

    @Test func historyOnEntryAsTheJoinAsksForIt() async throws {
        try await withServer { server in
            for user in ["alice", "bob", "carol"] { try await server.createAccount(user) }
            let clients = try ["alice", "bob", "carol"].map { try server.client($0) }
            defer { Task { for (client, _) in clients { await client.disconnect() } } }
            for (client, _) in clients { try await client.connect() }
            let (alice, _) = clients[0]
            let (bob, bobEvents) = clients[1]
            let (carol, carolEvents) = clients[2]
            try await alice.join(Self.team, nick: "Alice")
            for body in ["one", "two", "three"] { try await alice.sendRoomMessage(to: Self.team, body: body) }
            try await alice.settle()

            // The last message only, flagged as history (XEP-0203 delay), before the entry completes.
            let joined = try await bob.join(Self.team, nick: "Bob", history: RoomHistoryRequest(maxStanzas: 1))
            #expect(Rooms.bodies(bobEvents, in: Self.team) == ["three"])
            let three = try await Rooms.message(bobEvents, "three")
            #expect(three.isHistory && three.nick == "Alice" && !joined.created)
            // None at all.
            try await carol.join(Self.team, nick: "Carol", history: RoomHistoryRequest.none)
            try await carol.settle()
            #expect(Rooms.bodies(carolEvents, in: Self.team).isEmpty)
        }
    }

    /// The server drops Alice's connection (a stream error ends her session, so the room
    /// lets her occupant go); her client reconnects, learns by self-ping (XEP-0410) that it
    /// is out, and enters again asking for the history since the last message it saw: what
    /// Bob said meanwhile arrives once, what she had already does not come again.
    @Test func rejoinsAfterTheServerDropsTheConnectionAndFillsTheGap() async throws {
        try await withServer(resumeTimeout: .milliseconds(1)) { server in
            for user in ["alice", "bob"] { try await server.createAccount(user) }
            let (alice, aliceEvents) = try server.client("alice")
            let (bob, bobEvents) = try server.client("bob")
            defer { Task { await alice.disconnect(); await bob.disconnect() } }
            try await alice.connect()
            try await bob.connect()
            try await bob.join(Self.team, nick: "Bob")
            try await alice.join(Self.team, nick: "Alice")
            try await bob.sendRoomMessage(to: Self.team, body: "before the cut")
            try await Rooms.message(aliceEvents, "before the cut")

            let aliceJID = jid("alice")
            for session in server.running.context.sessions.sessions(of: aliceJID) {
                session.terminate(StreamError(.connectionTimeout, text: "dropped by the test"))
            }
            try await Rooms.next(bobEvents, "Alice's occupant gone with her session") {
                if case .occupantLeft(Self.team, let o, _) = $0 { o.nick == "Alice" } else { false }
            }
            try await bob.sendRoomMessage(to: Self.team, body: "while alice was away")
            // The history comes before the entry completes (with the subject, §7.2.15).
            let missed = try await Rooms.message(aliceEvents, "while alice was away", within: .seconds(20))
            #expect(missed.isHistory && missed.nick == "Bob")
            try await Rooms.next(aliceEvents, "Alice back in the room") { $0 == .rejoined(room: Self.team, nick: "Alice") }
            try await Rooms.next(bobEvents, "Alice joining again") { if case .occupantJoined(Self.team, let o) = $0 { o.nick == "Alice" } else { false } }
            #expect(await alice.isInRoom(Self.team))
            try await bob.sendRoomMessage(to: Self.team, body: "welcome back")
            try await Rooms.message(aliceEvents, "welcome back")
            #expect(Rooms.bodies(aliceEvents, in: Self.team) == ["before the cut", "while alice was away", "welcome back"])
            #expect(try await alice.history(with: Self.team).map(\.body) == ["before the cut", "while alice was away", "welcome back"])
        }
    }
}

private func pmID(_ event: RoomEvent) -> String? {
    if case .privateMessage(let m) = event { m.id } else { nil }
}

private func pmOccupant(_ event: RoomEvent) -> String? {
    if case .privateMessage(let m) = event { m.occupantID } else { nil }
}
