import ParleyCore
import Testing

/// Affiliation changes a room refuses, each with the error XEP-0045 names: an admin who
/// tries to make an owner or an admin is forbidden (§10.3–10.8: only owners modify those
/// lists), one who tries to demote or ban an owner is not allowed (§9.1), and no admin or
/// owner may ban itself (§9.1: conflict). Nothing changes.
@Suite struct MUCAffiliationRefusalScenarios {
    @Test func anAdminCannotMakeOwnersOrAdminsNorBanAnOwnerNorItself() async throws {
        try await MUC.with { server in
            let alice = try await server.im("alice")
            try await MUC.createInstantRoom(alice, "team", nick: "Alice")
            try await alice.sendAdmin("<item jid='carol@localhost' affiliation='admin'/>", id: "a")
            _ = try await alice.expect("message")
            try await alice.expectResult("a")

            let carol = try await server.im("carol")
            let refusals: [(item: String, condition: StanzaErrorCondition)] = [
                ("<item jid='bob@localhost' affiliation='admin'/>", .forbidden),
                ("<item jid='bob@localhost' affiliation='owner'/>", .forbidden),
                ("<item jid='alice@localhost' affiliation='outcast'/>", .notAllowed),
                ("<item jid='alice@localhost' affiliation='member'/>", .notAllowed),
                ("<item jid='carol@localhost' affiliation='outcast'/>", .conflict),
            ]
            for (index, refusal) in refusals.enumerated() {
                let answer = try await carol.query(
                    "<iq type='set' id='r\(index)' to='\(MUCScenarios.room)'><query xmlns='\(MUCRoles.admin)'>\(refusal.item)</query></iq>",
                    id: "r\(index)")
                #expect(answer.type == "error" && answer.stanzaErrorCondition == refusal.condition, "\(refusal.item) → \(answer.xmlString())")
            }
            // The owner may not ban itself either, alone or not.
            let selfBan = try await alice.query(
                "<iq type='set' id='s' to='\(MUCScenarios.room)'><query xmlns='\(MUCRoles.admin)'><item jid='alice@localhost' affiliation='outcast'/></query></iq>",
                id: "s")
            #expect(selfBan.type == "error" && selfBan.stanzaErrorCondition == .conflict, "\(selfBan.xmlString())")

            // The lists are as they were.
            for (affiliation, expected) in [("owner", ["alice@localhost"]), ("admin", ["carol@localhost"]), ("outcast", [])] {
                let list = try await alice.query(
                    "<iq type='get' id='l-\(affiliation)' to='\(MUCScenarios.room)'><query xmlns='\(MUCRoles.admin)'><item affiliation='\(affiliation)'/></query></iq>",
                    id: "l-\(affiliation)")
                let jids = list.firstChild("query", namespace: MUCRoles.admin)?.children("item", namespace: MUCRoles.admin).compactMap { $0[attribute: "jid"] }
                #expect(jids == expected, "\(affiliation): \(list.xmlString())")
            }
        }
    }
}
