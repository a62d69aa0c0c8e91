import ParleyCore
import ParleyServer
import Testing

/// The occupant presence a room sends on entry (XEP-0045 §7.2.3), which the service builds
/// once per occupant and copies to each recipient: what each recipient may see, and changes
/// that must show in the next newcomer's list.
@Suite struct MUCPresenceBroadcastScenarios {
    static let room = MUCScenarios.room

    @Test func aModeratorEnteringASemiAnonymousRoomSeesRealJIDsAParticipantDoesNot() async throws {
        try await MUC.with { server in
            let (alice, bob, carol) = try await MUCScenarios.threeInTheRoom(server)
            try await alice.send("<presence to='\(Self.room)/Alice' type='unavailable'/>")
            try await alice.expectRoomPresence("team", "Alice", type: "unavailable", codes: [110])
            for client in [bob, carol] { try await client.expectRoomPresence("team", "Alice", type: "unavailable") }

            // Alice is the owner, so a moderator again: §7.2.3 gives her the real JIDs.
            let entry = try await alice.enter("team", nick: "Alice")
            let jids = Dictionary(uniqueKeysWithValues: entry.others.map { ($0.from ?? "", $0.mucItem?[attribute: "jid"]) })
            #expect(jids == ["\(Self.room)/Bob": "bob@localhost/r", "\(Self.room)/Carol": "carol@localhost/r"], "\(jids)")
            // The participants get hers without it, the same stanza but for `to`.
            for client in [bob, carol] {
                let arrived = try await client.expectRoomPresence("team", "Alice")
                #expect(arrived.mucItem?[attribute: "jid"] == nil && arrived.mucItem?[attribute: "role"] == "moderator")
                #expect(arrived.to == "\(client === bob ? "bob" : "carol")@localhost/r", "\(arrived.xmlString())")
            }
        }
    }

    @Test func anAffiliationChangeShowsInTheNextNewcomersList() async throws {
        try await MUC.with { server in
            let (alice, bob, carol) = try await MUCScenarios.threeInTheRoom(server)
            try await alice.send(
                "<iq type='set' id='m1' to='\(Self.room)'><query xmlns='http://jabber.org/protocol/muc#admin'>"
                    + "<item jid='bob@localhost' affiliation='member'/></query></iq>")
            // The result and the room's announcement of the change may come in either order.
            let answers = [try await alice.nextElement(), try await alice.nextElement()]
            #expect(answers.contains { $0.name == "iq" && $0.id == "m1" && $0.type == "result" }, "\(answers.map { $0.xmlString() })")
            #expect(answers.contains { $0.name == "presence" && $0.mucItem?[attribute: "affiliation"] == "member" })
            try await bob.expectRoomPresence("team", "Bob", codes: [110])
            let changed = try await carol.expectRoomPresence("team", "Bob")
            #expect(changed.mucItem?[attribute: "affiliation"] == "member", "\(changed.xmlString())")

            try await carol.send("<presence to='\(Self.room)/Carol' type='unavailable'/>")
            try await carol.expectRoomPresence("team", "Carol", type: "unavailable", codes: [110])
            for client in [alice, bob] { try await client.expectRoomPresence("team", "Carol", type: "unavailable") }
            let entry = try await carol.enter("team", nick: "Carol")
            let items = Dictionary(uniqueKeysWithValues: entry.others.map { ($0.from ?? "", $0.mucItem?[attribute: "affiliation"]) })
            #expect(items == ["\(Self.room)/Alice": "owner", "\(Self.room)/Bob": "member"], "\(entry.others.map { $0.xmlString() })")
            #expect(entry.others.allSatisfy { $0.mucItem?[attribute: "jid"] == nil && $0.to == "carol@localhost/r" })
        }
    }
}
