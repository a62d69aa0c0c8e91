import ParleyCore
import Testing

/// Who sees real JIDs in a semi-anonymous room follows the role (XEP-0045 §7.2.3–7.2.4): a
/// new moderator gets everyone's presence again with the `jid` (as Prosody does), a demoted
/// one gets no `jid` in the presence that follows.
@Suite struct MUCRealJIDScenarios {
    static let room = MUCScenarios.room

    /// The presence of each of `nicks` (in that order) to a new moderator: unchanged but for
    /// the real JID its item now shows.
    private func expectRevealed(_ client: TestClient, _ occupants: [(nick: String, jid: String)]) async throws {
        for (nick, jid) in occupants {
            let presence = try await client.expectRoomPresence("team", nick)
            #expect(presence.mucItem?[attribute: "jid"] == jid, "\(presence.xmlString())")
        }
    }

    @Test func aParticipantMadeModeratorSeesRealJIDsAndNoLongerOnceDemoted() async throws {
        try await MUC.with { server in
            let (alice, bob, carol) = try await MUCScenarios.threeInTheRoom(server)
            let phone = try await server.im("bob", "phone", available: false)
            let entry = try await phone.enter("team", nick: "Bob")
            #expect(entry.others.allSatisfy { $0.mucItem?[attribute: "jid"] == nil }, "\(entry.others.map { $0.xmlString() })")

            try await alice.sendAdmin("<item nick='Bob' role='moderator'/>", id: "up")
            let toAlice = try await alice.expectRoomPresence("team", "Bob")
            #expect(toAlice.mucItem?[attribute: "role"] == "moderator" && toAlice.mucItem?[attribute: "jid"] == "bob@localhost/r")
            try await alice.expectResult("up")
            let toCarol = try await carol.expectRoomPresence("team", "Bob")
            #expect(toCarol.mucItem?[attribute: "role"] == "moderator" && toCarol.mucItem?[attribute: "jid"] == nil)
            // Both of Bob's devices: its own new presence, then the others' with their JIDs.
            for device in [bob, phone] {
                let own = try await device.expectRoomPresence("team", "Bob", codes: [110])
                #expect(own.mucItem?[attribute: "role"] == "moderator")
                try await expectRevealed(device, [("Alice", "alice@localhost/r"), ("Carol", "carol@localhost/r")])
            }
            for client in [alice, bob, carol, phone] { try await client.expectNothingPending() }

            try await alice.sendAdmin("<item nick='Bob' role='participant'/>", id: "down")
            _ = try await alice.expectRoomPresence("team", "Bob")
            try await alice.expectResult("down")
            _ = try await carol.expectRoomPresence("team", "Bob")
            for device in [bob, phone] {
                let own = try await device.expectRoomPresence("team", "Bob", codes: [110])
                #expect(own.mucItem?[attribute: "role"] == "participant")
            }
            for client in [alice, bob, carol, phone] { try await client.expectNothingPending("nothing is resent on demotion") }
            try await carol.send("<presence to='\(Self.room)/Carol'><show>away</show></presence>")
            for device in [bob, phone] {
                let seen = try await device.expectRoomPresence("team", "Carol")
                #expect(seen.mucItem?[attribute: "jid"] == nil, "\(seen.xmlString())")
            }
        }
    }

    @Test func anOccupantMadeAdminSeesRealJIDs() async throws {
        try await MUC.with { server in
            let (alice, bob, carol) = try await MUCScenarios.threeInTheRoom(server)
            try await alice.sendAdmin("<item jid='carol@localhost' affiliation='admin'/>", id: "admin")
            let toAlice = try await alice.expectRoomPresence("team", "Carol")
            #expect(toAlice.mucItem?[attribute: "affiliation"] == "admin" && toAlice.mucItem?[attribute: "role"] == "moderator")
            try await alice.expectResult("admin")
            let toBob = try await bob.expectRoomPresence("team", "Carol")
            #expect(toBob.mucItem?[attribute: "jid"] == nil)
            _ = try await carol.expectRoomPresence("team", "Carol", codes: [110])
            try await expectRevealed(carol, [("Alice", "alice@localhost/r"), ("Bob", "bob@localhost/r")])
            for client in [alice, bob, carol] { try await client.expectNothingPending() }

            // A non-anonymous room has nothing to reveal.
            try await MUC.configure(alice, "team", "<field var='muc#roomconfig_whois'><value>anyone</value></field>")
            for client in [alice, bob, carol] { _ = try await client.expectRoomStatus([172]) }
            try await alice.sendAdmin("<item jid='bob@localhost' affiliation='admin'/>", id: "admin2")
            _ = try await alice.expectRoomPresence("team", "Bob")
            try await alice.expectResult("admin2")
            _ = try await carol.expectRoomPresence("team", "Bob")
            _ = try await bob.expectRoomPresence("team", "Bob", codes: [110])
            for client in [alice, bob, carol] { try await client.expectNothingPending() }
        }
    }

    /// The room keeps each session's role-derived view between broadcasts (`MUCRecipient`):
    /// a promotion must reach the presence broadcasts that follow it (a newcomer's arrival,
    /// an update), for every device of the promoted occupant, and a device that left must
    /// get nothing more.
    @Test func aNewModeratorSeesTheRealJIDsOfLaterArrivalsOnEveryDevice() async throws {
        try await MUC.with { server in
            let (alice, bob, carol) = try await MUCScenarios.threeInTheRoom(server)
            let phone = try await server.im("bob", "phone", available: false)
            _ = try await phone.enter("team", nick: "Bob")
            try await alice.sendAdmin("<item nick='Bob' role='moderator'/>", id: "up")
            _ = try await alice.expectRoomPresence("team", "Bob")
            try await alice.expectResult("up")
            _ = try await carol.expectRoomPresence("team", "Bob")
            for device in [bob, phone] {
                _ = try await device.expectRoomPresence("team", "Bob", codes: [110])
                try await expectRevealed(device, [("Alice", "alice@localhost/r"), ("Carol", "carol@localhost/r")])
            }

            // Carol leaves and comes back: a newcomer's arrival, to the new moderator's devices.
            try await carol.send("<presence to='\(Self.room)/Carol' type='unavailable'/>")
            _ = try await carol.expectRoomPresence("team", "Carol", type: "unavailable", codes: [110])
            for client in [alice, bob, phone] { _ = try await client.expectRoomPresence("team", "Carol", type: "unavailable") }
            _ = try await carol.enter("team", nick: "Carol")
            for device in [bob, phone] {
                let seen = try await device.expectRoomPresence("team", "Carol")
                #expect(seen.mucItem?[attribute: "jid"] == "carol@localhost/r", "\(seen.xmlString())")
            }
            _ = try await alice.expectRoomPresence("team", "Carol")

            try await phone.send("<presence to='\(Self.room)/Bob' type='unavailable'/>")
            _ = try await phone.expectRoomPresence("team", "Bob", type: "unavailable", codes: [110])
            try await carol.send("<presence to='\(Self.room)/Carol'><show>away</show></presence>")
            let toBob = try await bob.expectRoomPresence("team", "Carol")
            #expect(toBob.mucItem?[attribute: "jid"] == "carol@localhost/r" && toBob.firstChild("show")?.text == "away")
            _ = try await alice.expectRoomPresence("team", "Carol")
            _ = try await carol.expectRoomPresence("team", "Carol", codes: [110])
            for client in [alice, bob, carol, phone] { try await client.expectNothingPending() }
        }
    }
}
