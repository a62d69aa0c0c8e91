import ParleyCore
import Testing

/// XEP-0313 v1.1 `urn:xmpp:mam:2#extended` on the room JID, as on the accounts' archives:
/// the metadata query, the `before-id`, `after-id` and `ids` fields, the feature in the
/// room's disco#info.
@Suite struct MUCArchiveExtendedScenarios {
    static let room = MUCArchiveScenarios.room

    private func metadata(_ client: TestClient, id: String) async throws -> XMLElement {
        let reply = try await client.query("<iq type='get' id='\(id)' to='\(Self.room)'><metadata xmlns='\(MUC.mam)'/></iq>", id: id)
        #expect(reply.type == "result" && reply.from == Self.room, "\(reply.xmlString())")
        return try #require(reply.firstChild("metadata", namespace: MUC.mam), "\(reply.xmlString())")
    }

    @Test func metadataIDFiltersAndTheFeature() async throws {
        try await MUC.archiving { server in
            let alice = try await server.im("alice")
            _ = try await alice.enter("team", nick: "Alice")
            try await MUC.configure(alice, "team", "")
            let bob = try await server.im("bob")

            let empty = try await metadata(bob, id: "md0")
            #expect(empty.elements.isEmpty, "an empty archive has no bounds: \(empty.xmlString())")

            try await alice.say((1...6).map { "m\($0)" }, in: "team")
            let all = try await bob.queryRoomArchive("team", queryID: "all")
            #expect(all.bodies == ["m1", "m2", "m3", "m4", "m5", "m6"])
            let ids = all.ids

            let bounds = try await metadata(bob, id: "md1")
            let start = try #require(bounds.firstChild("start", namespace: MUC.mam))
            let end = try #require(bounds.firstChild("end", namespace: MUC.mam))
            #expect(start[attribute: "id"] == ids.first && end[attribute: "id"] == ids.last, "\(bounds.xmlString())")
            #expect(start[attribute: "timestamp"]?.hasSuffix("Z") == true && end[attribute: "timestamp"] != nil)

            // after-id and before-id are filters: the count is of what lies between.
            let between = try await bob.queryRoomArchive(
                "team", fields: "<field var='after-id'><value>\(ids[1])</value></field><field var='before-id'><value>\(ids[5])</value></field>",
                set: "<max>2</max>", queryID: "between")
            #expect(between.bodies == ["m3", "m4"] && between.count == 3 && !between.complete, "\(between.iq.xmlString())")
            let picked = try await bob.queryRoomArchive(
                "team", fields: "<field var='ids'><value>\(ids[4])</value><value>\(ids[0])</value><value>unknown</value></field>",
                queryID: "ids")
            #expect(picked.bodies == ["m1", "m5"] && picked.count == 2 && picked.complete)

            let unknown = try await bob.query(
                """
                <iq type='set' id='bad' to='\(Self.room)'><query xmlns='\(MUC.mam)'><x xmlns='jabber:x:data' type='submit'>\
                <field var='after-id'><value>no-such-id</value></field></x></query></iq>
                """, id: "bad")
            #expect(unknown.type == "error" && unknown.stanzaErrorCondition == .itemNotFound, "\(unknown.xmlString())")
            let many = (0...250).map { "<value>x\($0)</value>" }.joined()
            let tooMany = try await bob.query(
                """
                <iq type='set' id='many' to='\(Self.room)'><query xmlns='\(MUC.mam)'><x xmlns='jabber:x:data' type='submit'>\
                <field var='ids'>\(many)</field></x></query></iq>
                """, id: "many")
            #expect(tooMany.stanzaErrorCondition == .policyViolation, "\(tooMany.xmlString())")

            let form = try await bob.query("<iq type='get' id='f' to='\(Self.room)'><query xmlns='\(MUC.mam)'/></iq>", id: "f")
            let fields = form.firstChild("query", namespace: MUC.mam)?.firstChild("x", namespace: "jabber:x:data")?.children("field", namespace: "jabber:x:data")
                .compactMap { $0[attribute: "var"] }
            #expect(fields == ["FORM_TYPE", "with", "start", "end", "before-id", "after-id", "ids"], "\(form.xmlString())")

            let info = try await bob.query(
                "<iq type='get' id='i' to='\(Self.room)'><query xmlns='http://jabber.org/protocol/disco#info'/></iq>", id: "i")
            let features = info.firstChild("query", namespace: XMLNamespace.discoInfo)?.children("feature").compactMap { $0[attribute: "var"] } ?? []
            #expect(features.contains(MUC.mam) && features.contains("urn:xmpp:mam:2#extended"), "\(features)")

            // Whoever may not read the archive may not read its bounds either.
            try await MUC.configure(alice, "team", "<field var='muc#roomconfig_membersonly'><value>1</value></field>")
            let closed = try await bob.query("<iq type='get' id='md2' to='\(Self.room)'><metadata xmlns='\(MUC.mam)'/></iq>", id: "md2")
            #expect(closed.stanzaErrorCondition == .forbidden, "\(closed.xmlString())")
        }
    }
}
