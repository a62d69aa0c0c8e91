import ParleyCore
import Testing

/// The status codes of configuration changes (104, 172, 173, §10.2.1), of removals (321,
/// 322, 332, 333), and of affiliation changes for someone not in the room (101), each seen by
/// everyone it concerns.
@Suite struct MUCStatusScenarios {
    static let room = MUCScenarios.room

    @Test func configurationChangesAreAnnouncedWith104And172And173() async throws {
        try await MUC.with { server in
            let (alice, bob, carol) = try await MUCScenarios.threeInTheRoom(server)
            try await MUCAccessScenarios.configure(alice, "<field var='muc#roomconfig_roomname'><value>Team room</value></field>")
            for client in [alice, bob, carol] { try await client.expectRoomStatus([104]) }
            try await MUCAccessScenarios.configure(alice, "<field var='muc#roomconfig_whois'><value>anyone</value></field>")
            for client in [alice, bob, carol] { try await client.expectRoomStatus([172]) }
            try await MUCAccessScenarios.configure(
                alice, "<field var='muc#roomconfig_whois'><value>moderators</value></field><field var='muc#roomconfig_roomdesc'><value>d</value></field>")
            for client in [alice, bob, carol] { try await client.expectRoomStatus([104, 173]) }
            // Submitting the same values again changes nothing and announces nothing.
            try await MUCAccessScenarios.configure(alice, "<field var='muc#roomconfig_roomname'><value>Team room</value></field>")
            for client in [alice, bob, carol] { try await client.expectNothingPending() }
        }
    }

    @Test func becomingMembersOnlyRemovesNonMembersWith322AndLosingMembershipWith321() async throws {
        try await MUC.with { server in
            let (alice, bob, carol) = try await MUCScenarios.threeInTheRoom(server)
            try await alice.sendAdmin("<item jid='bob@localhost' affiliation='member'/>", id: "m")
            for client in [alice, carol] {
                let seen = try await client.expectRoomPresence("team", "Bob")
                #expect(seen.mucItem?[attribute: "affiliation"] == "member")
            }
            try await alice.expectResult("m")
            try await bob.expectRoomPresence("team", "Bob", codes: [110])

            try await MUCAccessScenarios.configure(alice, "<field var='muc#roomconfig_membersonly'><value>1</value></field>")
            try await carol.expectRoomPresence("team", "Carol", type: "unavailable", codes: [110, 322])
            for client in [alice, bob] {
                try await client.expectRoomPresence("team", "Carol", type: "unavailable", codes: [322])
                try await client.expectRoomStatus([104])
            }
            try await carol.expectNothingPending("no longer in the room")
            try await carol.send("<message to='\(Self.room)' type='groupchat' id='x'><body>still here?</body></message>")
            #expect(try await carol.expect("message").stanzaErrorCondition == .notAcceptable)

            // §9.4: revoking Bob's membership takes him out of a members-only room (321).
            try await alice.sendAdmin("<item jid='bob@localhost' affiliation='none'><reason>bye</reason></item>", id: "r")
            let gone = try await bob.expectRoomPresence("team", "Bob", type: "unavailable", codes: [110, 321])
            #expect(gone.mucItem?[attribute: "affiliation"] == "none" && gone.mucItem?.firstChild("reason", namespace: MUC.user)?.text == "bye")
            try await alice.expectRoomPresence("team", "Bob", type: "unavailable", codes: [321])
            try await alice.expectResult("r")
            try await carol.expectNothingPending()
        }
    }

    @Test func anAffiliationChangeForSomeoneAwayIsAnnounced() async throws {
        try await MUC.with { server in
            let alice = try await server.im("alice")
            let bob = try await server.im("bob")
            let carol = try await server.im("carol")
            try await MUC.createInstantRoom(alice, "team", nick: "Alice")
            _ = try await bob.enter("team", nick: "Bob")
            try await alice.expectRoomPresence("team", "Bob")

            try await alice.sendAdmin("<item jid='carol@localhost' affiliation='admin'><reason>welcome</reason></item>", id: "a")
            // Semi-anonymous: the moderator sees the real JID's new affiliation, Bob does not.
            let seen = try await alice.expect("message")
            try await alice.expectResult("a")
            #expect(seen.from == Self.room && seen.type == nil && seen.mucItem?[attribute: "jid"] == "carol@localhost", "\(seen.xmlString())")
            #expect(seen.mucItem?[attribute: "affiliation"] == "admin" && seen.statusCodes.isEmpty)
            try await bob.expectNothingPending()
            let told = try await carol.expect("message")
            #expect(told.from == Self.room && told.type == "headline" && told.statusCodes == [101], "\(told.xmlString())")
            #expect(told.mucItem?[attribute: "affiliation"] == "admin" && told.firstChild("body") != nil)
            #expect(told.mucItem?.firstChild("reason", namespace: MUC.user)?.text == "welcome")

            // Carol enters as an admin: a moderator.
            let entered = try await carol.enter("team", nick: "Carol")
            #expect(entered.own.mucItem?[attribute: "affiliation"] == "admin" && entered.own.mucItem?[attribute: "role"] == "moderator")
        }
    }

    /// An occupant whose client answers room traffic with an error is taken out of the room,
    /// the others told with 333 (as Prosody); a presence error and a message error alike.
    @Test func anOccupantWhoseClientReturnsAnErrorIsRemovedWith333() async throws {
        try await MUC.with { server in
            let (alice, bob, carol) = try await MUCScenarios.threeInTheRoom(server)
            let error = "<error type='cancel'><service-unavailable xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error>"
            try await bob.send("<presence type='error' to='\(Self.room)/Alice'>\(error)</presence>")
            for client in [alice, carol] { try await client.expectRoomPresence("team", "Bob", type: "unavailable", codes: [333]) }
            try await carol.send("<message type='error' to='\(Self.room)/Alice' id='x'>\(error)</message>")
            try await alice.expectRoomPresence("team", "Carol", type: "unavailable", codes: [333])
            try await alice.send("<message to='\(Self.room)' type='groupchat' id='after'><body>still here?</body></message>")
            #expect(try await alice.expectMessage(id: "after").from == "\(Self.room)/Alice")
            for client in [alice, bob, carol] { try await client.expectNothingPending() }
        }
    }

    @Test func aGracefulShutdownTellsEveryOccupantWith332() async throws {
        try await MUC.with { server in
            let (alice, bob, carol) = try await MUCScenarios.threeInTheRoom(server)
            let running = server.running
            let stopping = Task { await running.shutdown() }
            for (client, nick) in [(alice, "Alice"), (bob, "Bob"), (carol, "Carol")] {
                let gone = try await client.expectRoomPresence("team", nick, type: "unavailable", codes: [110, 332])
                #expect(gone.mucItem?[attribute: "role"] == "none", "\(gone.xmlString())")
                _ = try await client.expectStreamError(.systemShutdown)
                await client.close()
            }
            await stopping.value
        }
    }
}
