import Foundation
import ParleyCore
import Testing

/// XEP-0313 v1.1 `urn:xmpp:mam:2#extended` (before-id, after-id, ids, flip-page), the
/// archive metadata request, and result sets as Prosody sends them (no `index` on `<first/>`).
@Suite struct ArchiveExtendedScenarios {
    static let mam = "urn:xmpp:mam:2"
    static let rsm = "http://jabber.org/protocol/rsm"

    /// Alice sends bob a1…a5; returns bob's client and the stanza-ids of the five, in order.
    private func fiveMessages(_ server: TestServer) async throws -> (TestClient, [String]) {
        let bob = try await server.login("bob", resource: "home")
        try await bob.available()
        let alice = try await server.login("alice", resource: "work")
        var ids: [String] = []
        for index in 1...5 {
            try await alice.sendMessage(to: "bob@localhost", id: "a\(index)", body: "a\(index)")
            let message = try await bob.expectMessage(id: "a\(index)")
            ids.append(try #require(message.firstChild("stanza-id", namespace: "urn:xmpp:sid:0")?[attribute: "id"]))
        }
        try await alice.sync()
        return (bob, ids)
    }

    private static func form(_ fields: String) -> String {
        "<x xmlns='jabber:x:data' type='submit'><field var='FORM_TYPE' type='hidden'><value>urn:xmpp:mam:2</value></field>\(fields)</x>"
    }

    /// Runs a query; returns the result messages' bodies and the reply (result or error).
    private func query(_ client: TestClient, id: String, _ inner: String) async throws -> (bodies: [String], reply: XMLElement) {
        try await client.send("<iq type='set' id='\(id)'><query xmlns='\(Self.mam)' queryid='q-\(id)'>\(inner)</query></iq>")
        var bodies: [String] = []
        while true {
            let element = try await client.nextElement()
            if element.name == "iq", element.id == id { return (bodies, element) }
            let result = try #require(element.firstChild("result", namespace: Self.mam), "\(element.xmlString())")
            bodies.append(
                result.firstChild("forwarded", namespace: "urn:xmpp:forward:0")?.firstChild("message")?.firstChild("body")?.text ?? "")
        }
    }

    private func set(_ reply: XMLElement) throws -> XMLElement {
        try #require(reply.firstChild("fin", namespace: Self.mam)?.firstChild("set", namespace: Self.rsm), "\(reply.xmlString())")
    }

    @Test func resultSetsCarryFirstWithoutAnIndex() async throws {
        try await TestServer.with { server in
            let (bob, ids) = try await fiveMessages(server)
            for (id, paging) in [("fwd", "<max>2</max>"), ("back", "<max>2</max><before/>")] {
                let (_, reply) = try await query(bob, id: id, "<set xmlns='\(Self.rsm)'>\(paging)</set>")
                let first = try #require(try set(reply).firstChild("first", namespace: Self.rsm))
                #expect(first[attribute: "index"] == nil, "\(reply.xmlString())")
                #expect(first.text == (id == "fwd" ? ids[0] : ids[3]))
            }
        }
    }

    @Test func beforeIDAndAfterIDFilterTheResultSet() async throws {
        try await TestServer.with { server in
            let (bob, ids) = try await fiveMessages(server)
            let fields = "<field var='after-id'><value>\(ids[0])</value></field><field var='before-id'><value>\(ids[4])</value></field>"
            let (bodies, reply) = try await query(bob, id: "q1", Self.form(fields) + "<set xmlns='\(Self.rsm)'><max>2</max></set>")
            #expect(bodies == ["a2", "a3"])
            // Unlike RSM's after/before, these filter: the count is of the filtered set.
            #expect(try set(reply).firstChild("count", namespace: Self.rsm)?.text == "3")
            #expect(reply.firstChild("fin", namespace: Self.mam)?[attribute: "complete"] == "false")
            let (rest, _) = try await query(
                bob, id: "q2", Self.form(fields) + "<set xmlns='\(Self.rsm)'><max>2</max><after>\(ids[2])</after></set>")
            #expect(rest == ["a4"])

            let (_, unknown) = try await query(bob, id: "q3", Self.form("<field var='after-id'><value>nope</value></field>"))
            #expect(unknown.type == "error" && unknown.stanzaErrorCondition == .itemNotFound)
        }
    }

    @Test func theIDsFieldSelectsExactlyThoseMessages() async throws {
        try await TestServer.with { server in
            let (bob, ids) = try await fiveMessages(server)
            let values = [ids[3], "unknown", ids[1]].map { "<value>\($0)</value>" }.joined()
            let (bodies, reply) = try await query(bob, id: "q", Self.form("<field var='ids' type='text-multi'>\(values)</field>"))
            #expect(bodies == ["a2", "a4"])
            #expect(try set(reply).firstChild("count", namespace: Self.rsm)?.text == "2")

            let many = (0...250).map { "<value>x\($0)</value>" }.joined()
            let (_, refused) = try await query(bob, id: "many", Self.form("<field var='ids'>\(many)</field>"))
            #expect(refused.type == "error" && refused.stanzaErrorCondition == .policyViolation)
        }
    }

    @Test func flipPageSendsThePageNewestFirst() async throws {
        try await TestServer.with { server in
            let (bob, ids) = try await fiveMessages(server)
            let (bodies, reply) = try await query(bob, id: "f", "<set xmlns='\(Self.rsm)'><max>3</max><before/></set><flip-page/>")
            #expect(bodies == ["a5", "a4", "a3"])
            let set = try set(reply)
            #expect(set.firstChild("first", namespace: Self.rsm)?.text == ids[2])
            #expect(set.firstChild("last", namespace: Self.rsm)?.text == ids[4])
        }
    }

    @Test func metadataNamesTheFirstAndLastMessage() async throws {
        try await TestServer.with { server in
            let carol = try await server.login("alice", resource: "empty")
            let empty = try await carol.query("<iq type='get' id='m0'><metadata xmlns='\(Self.mam)'/></iq>", id: "m0")
            let nothing = try #require(empty.firstChild("metadata", namespace: Self.mam), "\(empty.xmlString())")
            #expect(nothing.elements.isEmpty)
            await carol.close()

            let (bob, ids) = try await fiveMessages(server)
            let reply = try await bob.query("<iq type='get' id='m1'><metadata xmlns='\(Self.mam)'/></iq>", id: "m1")
            let metadata = try #require(reply.firstChild("metadata", namespace: Self.mam), "\(reply.xmlString())")
            let start = try #require(metadata.firstChild("start", namespace: Self.mam))
            let end = try #require(metadata.firstChild("end", namespace: Self.mam))
            #expect(start[attribute: "id"] == ids[0] && end[attribute: "id"] == ids[4])
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let first = try #require(start[attribute: "timestamp"].flatMap(formatter.date(from:)))
            let last = try #require(end[attribute: "timestamp"].flatMap(formatter.date(from:)))
            #expect(first <= last && abs(last.timeIntervalSinceNow) < 60)
        }
    }

    @Test func theAccountAdvertisesExtendedAndListsTheFields() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            let info = try await alice.query(
                "<iq type='get' id='d'><query xmlns='http://jabber.org/protocol/disco#info'/></iq>", id: "d")
            let features = info.firstChild("query")?.children("feature").compactMap { $0[attribute: "var"] } ?? []
            #expect(features.contains("urn:xmpp:mam:2#extended") && features.contains(Self.mam))
            let reply = try await alice.query("<iq type='get' id='f'><query xmlns='\(Self.mam)'/></iq>", id: "f")
            let fields = reply.firstChild("query", namespace: Self.mam)?.firstChild("x", namespace: "jabber:x:data")?
                .children("field", namespace: "jabber:x:data").compactMap { $0[attribute: "var"] } ?? []
            #expect(Set(fields).isSuperset(of: ["FORM_TYPE", "with", "start", "end", "before-id", "after-id", "ids"]), "\(reply.xmlString())")
        }
    }
}
