import ParleyCore
import Testing

/// The owner and admin lists in the configuration form (XEP-0045 §15.5.3
/// `muc#roomconfig_roomowners` and `muc#roomconfig_roomadmins`): the form shows them, each
/// submitted field replaces its whole list (§10.5), a form sent back unchanged changes
/// nothing, and a room is never left without an owner.
@Suite struct MUCOwnerListScenarios {
    private static let owners = "muc#roomconfig_roomowners"
    private static let admins = "muc#roomconfig_roomadmins"

    @Test func theFormListsOwnersAndAdminsAndEachFieldReplacesItsList() async throws {
        try await MUC.with { server in
            let alice = try await server.im("alice")
            try await MUC.createInstantRoom(alice, "team", nick: "Alice")
            #expect(try await Self.lists(alice) == [Self.owners: ["alice@localhost"], Self.admins: []])

            try await MUC.configure(alice, "team", Self.fields(owners: ["alice@localhost", "bob@localhost"], admins: ["carol@localhost"]))
            // Alice, a moderator, is told of each change (as an affiliation change by iq would).
            #expect(try await Self.announced(alice, count: 2) == ["bob@localhost": "owner", "carol@localhost": "admin"])
            #expect(try await Self.lists(alice) == [Self.owners: ["alice@localhost", "bob@localhost"], Self.admins: ["carol@localhost"]])

            // The lists sent back as they came: nothing changes, nothing is announced.
            try await MUC.configure(alice, "team", Self.fields(owners: ["bob@localhost", "alice@localhost"], admins: ["carol@localhost"]))
            try await alice.expectNothingPending("an unchanged list announces nothing")

            // No owner left: conflict, and nothing changes.
            let ownerless = try await alice.query(
                "<iq type='set' id='none' to='\(MUCScenarios.room)'><query xmlns='\(MUC.owner)'><x xmlns='jabber:x:data' type='submit'>\(Self.fields(owners: [], admins: []))</x></query></iq>",
                id: "none")
            #expect(ownerless.type == "error" && ownerless.stanzaErrorCondition == .conflict, "\(ownerless.xmlString())")
            let malformed = try await alice.query(
                "<iq type='set' id='bad' to='\(MUCScenarios.room)'><query xmlns='\(MUC.owner)'><x xmlns='jabber:x:data' type='submit'>\(Self.fields(owners: ["alice@localhost", "@bad"], admins: []))</x></query></iq>",
                id: "bad")
            #expect(malformed.type == "error" && malformed.stanzaErrorCondition == .jidMalformed, "\(malformed.xmlString())")
            #expect(try await Self.lists(alice) == [Self.owners: ["alice@localhost", "bob@localhost"], Self.admins: ["carol@localhost"]])

            // Off both lists: no affiliation; from one list to the other: moved.
            try await MUC.configure(alice, "team", Self.fields(owners: ["alice@localhost"], admins: ["bob@localhost"]))
            #expect(try await Self.announced(alice, count: 2) == ["bob@localhost": "admin", "carol@localhost": "none"])
            #expect(try await Self.lists(alice) == [Self.owners: ["alice@localhost"], Self.admins: ["bob@localhost"]])
        }
    }

    private static func fields(owners: [String], admins: [String]) -> String {
        [(Self.owners, owners), (Self.admins, admins)].map { name, jids in
            "<field var='\(name)'>" + jids.map { "<value>\($0)</value>" }.joined() + "</field>"
        }.joined()
    }

    /// Both lists as the configuration form shows them, sorted.
    private static func lists(_ owner: TestClient) async throws -> [String: [String]] {
        let reply = try await owner.query("<iq type='get' id='form' to='\(MUCScenarios.room)'><query xmlns='\(MUC.owner)'/></iq>", id: "form")
        let fields = reply.firstChild("query", namespace: MUC.owner)?.firstChild("x", namespace: XMLNamespace.dataForms)?
            .children("field", namespace: XMLNamespace.dataForms) ?? []
        var lists: [String: [String]] = [:]
        for field in fields where [Self.owners, Self.admins].contains(field[attribute: "var"] ?? "") {
            #expect(field[attribute: "type"] == "jid-multi")
            lists[field[attribute: "var"] ?? ""] = field.children("value", namespace: XMLNamespace.dataForms).compactMap(\.text).sorted()
        }
        return lists
    }

    /// The next `count` affiliation notices from the room: real JID → new affiliation.
    private static func announced(_ client: TestClient, count: Int) async throws -> [String: String] {
        var changes: [String: String] = [:]
        for _ in 0..<count {
            let notice = try await client.expect("message")
            #expect(notice.from == MUCScenarios.room, "\(notice.xmlString())")
            changes[notice.mucItem?[attribute: "jid"] ?? ""] = notice.mucItem?[attribute: "affiliation"]
        }
        return changes
    }
}
