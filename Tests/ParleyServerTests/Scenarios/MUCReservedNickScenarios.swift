import ParleyCore
import Testing

/// Reserved nicknames (XEP-0045 §7.10, §7.12) once they are taken: nobody else enters under
/// one (`conflict`), and with registered nicknames enforced (Prosody's
/// `enforce_registered_nickname`) registering kicks the account's occupant under another
/// nickname (307), as Prosody does, so it comes back under the reserved one.
@Suite struct MUCReservedNickScenarios {
    static let room = MUCScenarios.room

    @Test func registeringUnderEnforcementKicksTheOccupantUnderAnotherNickname() async throws {
        try await MUC.with({ $0.nicknames.enforceRegistered = true }) { server in
            let (alice, bob, carol) = try await MUCScenarios.threeInTheRoom(server)
            let phone = try await server.im("bob", "phone", available: false)
            _ = try await phone.enter("team", nick: "Bob")

            let done = try await bob.query(MUCRoles.registration("Bobby", id: "r"), id: "r")
            #expect(done.type == "result", "\(done.xmlString())")
            for device in [bob, phone] {
                let own = try await device.expectRoomPresence("team", "Bob", type: "unavailable", codes: [110, 307])
                #expect(own.mucItem?.firstChild("reason", namespace: MUC.user)?.text == "You registered the nickname 'Bobby' in this room.")
            }
            for client in [alice, carol] { try await client.expectRoomPresence("team", "Bob", type: "unavailable", codes: [307]) }
            // Out of the room, Bob hears of its membership as anyone away does (101).
            let told = try await bob.expect("message")
            #expect(told.type == "headline" && told.statusCodes == [101], "\(told.xmlString())")
            let seen = try await alice.expect("message")
            #expect(seen.mucItem?[attribute: "affiliation"] == "member", "\(seen.xmlString())")
            for client in [bob, carol, phone] { try await client.expectNothingPending() }

            // The reservation keeps Carol from changing to it while Bob is away.
            try await carol.send("<presence to='\(Self.room)/Bobby'/>")
            let refused = try await carol.expect("presence")
            #expect(refused.type == "error" && refused.stanzaErrorCondition == .conflict, "\(refused.xmlString())")
            let back = try await bob.enter("team", nick: "Bob")
            #expect(back.own.from == "\(Self.room)/Bobby" && back.own.statusCodes == [110, 210], "\(back.own.xmlString())")
            for client in [alice, carol] { try await client.expectRoomPresence("team", "Bobby") }
        }
    }

    @Test func withoutEnforcementRegisteringKicksNobody() async throws {
        try await MUC.with { server in
            let (alice, bob, carol) = try await MUCScenarios.threeInTheRoom(server)
            let done = try await bob.query(MUCRoles.registration("Bobby", id: "r"), id: "r")
            #expect(done.type == "result", "\(done.xmlString())")
            // Bob is in the room: its presence shows the new affiliation.
            for client in [alice, carol] {
                let seen = try await client.expectRoomPresence("team", "Bob")
                #expect(seen.mucItem?[attribute: "affiliation"] == "member")
            }
            _ = try await bob.expectRoomPresence("team", "Bob", codes: [110])
            for client in [alice, bob, carol] { try await client.expectNothingPending() }
        }
    }
}
