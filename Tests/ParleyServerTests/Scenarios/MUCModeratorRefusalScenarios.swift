import ParleyCore
import Testing

/// Moderator is given and taken by admins and owners only (XEP-0045 §9.6–9.7, as Prosody):
/// a moderator without such an affiliation may not demote or kick another moderator, and
/// nothing changes; an owner may.
@Suite struct MUCModeratorRefusalScenarios {
    @Test func aModeratorWithoutAffiliationCannotDemoteOrKickAnotherModerator() async throws {
        try await MUC.with { server in
            let (alice, bob, carol) = try await MUCScenarios.threeInTheRoom(server)
            for nick in ["Bob", "Carol"] {
                try await alice.sendAdmin("<item nick='\(nick)' role='moderator'/>", id: "up-\(nick)")
            }
            for (index, item) in ["<item nick='Carol' role='participant'/>", "<item nick='Carol' role='none'/>"].enumerated() {
                try await bob.sendAdmin(item, id: "refused\(index)")
                let answer = try await Self.reply(to: "refused\(index)", on: bob)
                #expect(answer.type == "error" && answer.stanzaErrorCondition == .forbidden, "\(item) → \(answer.xmlString())")
            }
            // Carol is still a moderator in the room: the owner's demotion is what reaches her.
            try await alice.sendAdmin("<item nick='Carol' role='participant'/>", id: "down")
            #expect(try await Self.reply(to: "down", on: alice).type == "result")
            // Her own presences (110): promoted, then demoted by the owner, never by Bob.
            var roles: [String] = []
            while roles.last != "participant" {
                let presence = try await carol.expect("presence")
                guard presence.from == "\(MUCScenarios.room)/Carol", presence.statusCodes == [110] else { continue }
                #expect(presence.type == nil, "still in the room: \(presence.xmlString())")
                roles.append(presence.mucItem?[attribute: "role"] ?? "")
            }
            #expect(roles == ["moderator", "participant"])
        }
    }

    /// The answer to iq `id`, past the presences the role changes before it caused.
    private static func reply(to id: String, on client: TestClient) async throws -> XMLElement {
        while true {
            let element = try await client.nextElement()
            if element.name == "iq", element.id == id { return element }
        }
    }
}
