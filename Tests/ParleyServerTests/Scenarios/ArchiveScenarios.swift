import ParleyCore
import Testing

/// XEP-0359 stanza ids, XEP-0313 archive queries with XEP-0059 paging, XEP-0424 retraction.
@Suite struct ArchiveScenarios {
    static let mam = "urn:xmpp:mam:2"
    static let sid = "urn:xmpp:sid:0"

    private func available(_ server: TestServer, _ username: String, resource: String) async throws -> TestClient {
        let client = try await server.login(username, resource: resource)
        try await client.send("<presence/>")
        try await client.expect("presence")
        return client
    }

    /// Runs a query and returns its result messages and the `<fin/>`.
    private func query(_ client: TestClient, id: String, _ inner: String = "") async throws -> ([XMLElement], XMLElement) {
        try await client.send("<iq type='set' id='\(id)'><query xmlns='\(Self.mam)' queryid='q-\(id)'>\(inner)</query></iq>")
        var results: [XMLElement] = []
        while true {
            let element = try await client.nextElement()
            if element.name == "iq" {
                #expect(element.id == id)
                guard element.type == "result" else { throw ScenarioFailure("query failed: \(element.xmlString())") }
                return (results, try #require(element.firstChild("fin", namespace: Self.mam)))
            }
            let result = try #require(element.firstChild("result", namespace: Self.mam), "\(element.xmlString())")
            #expect(result[attribute: "queryid"] == "q-\(id)")
            results.append(element)
        }
    }

    private func bodies(_ results: [XMLElement]) -> [String] {
        results.compactMap {
            $0.firstChild("result", namespace: Self.mam)?.firstChild("forwarded", namespace: "urn:xmpp:forward:0")?
                .firstChild("message")?.firstChild("body")?.text
        }
    }

    private func rsm(_ fin: XMLElement, _ name: String) -> String? {
        fin.firstChild("set", namespace: "http://jabber.org/protocol/rsm")?.firstChild(name, namespace: "http://jabber.org/protocol/rsm")?.text
    }

    @Test func theServerAddsItsStanzaIDAndKeepsTheOriginID() async throws {
        try await TestServer.with { server in
            let bob = try await available(server, "bob", resource: "home")
            let alice = try await server.login("alice", resource: "work")
            try await alice.send(
                """
                <message to='bob@localhost' type='chat' id='m1'><body>hi</body><origin-id xmlns='urn:xmpp:sid:0' id='o1'/>\
                <stanza-id xmlns='urn:xmpp:sid:0' by='bob@localhost' id='forged'/></message>
                """)
            let message = try await bob.expect("message")
            let ids = message.children("stanza-id", namespace: Self.sid)
            #expect(ids.count == 1)
            let stanzaID = try #require(ids.first)
            #expect(stanzaID[attribute: "by"] == "bob@localhost" && stanzaID[attribute: "id"] != "forged")
            #expect(message.firstChild("origin-id", namespace: Self.sid)?[attribute: "id"] == "o1")

            // The same id finds it in bob's archive.
            let (results, fin) = try await query(bob, id: "q1")
            #expect(results.count == 1)
            #expect(results.first?.firstChild("result", namespace: Self.mam)?[attribute: "id"] == stanzaID[attribute: "id"])
            #expect(fin[attribute: "complete"] == "true")
        }
    }

    @Test func queriesPageThroughBothArchivesInServerOrder() async throws {
        try await TestServer.with { server in
            let bob = try await available(server, "bob", resource: "home")
            let alice = try await server.login("alice", resource: "work")
            for index in 1...5 {
                try await alice.send("<message to='bob@localhost' type='chat' id='a\(index)'><body>a\(index)</body></message>")
                try await bob.expect("message")
            }
            // Chat states alone are not archived.
            try await alice.send(
                "<message to='bob@localhost' type='chat'><composing xmlns='http://jabber.org/protocol/chatstates'/></message>")
            try await bob.expect("message")
            try await bob.send("<message to='alice@localhost' type='chat' id='b1'><body>b1</body></message>")
            // b1 travels on bob's stream: once a ping on it is answered, b1 has been routed and
            // archived (a stream's stanzas take effect in order), whatever alice's stream does.
            _ = try await bob.sync()

            let form = """
                <x xmlns='jabber:x:data' type='submit'><field var='FORM_TYPE' type='hidden'><value>urn:xmpp:mam:2</value></field>\
                <field var='with'><value>bob@localhost</value></field></x>
                """
            let (page1, fin1) = try await query(alice, id: "p1", form + "<set xmlns='http://jabber.org/protocol/rsm'><max>4</max></set>")
            #expect(bodies(page1) == ["a1", "a2", "a3", "a4"])
            #expect(fin1[attribute: "complete"] == "false" && rsm(fin1, "count") == "6")
            let last = try #require(rsm(fin1, "last"))
            let (page2, fin2) = try await query(
                alice, id: "p2", form + "<set xmlns='http://jabber.org/protocol/rsm'><max>4</max><after>\(last)</after></set>")
            #expect(bodies(page2) == ["a5", "b1"])
            #expect(fin2[attribute: "complete"] == "true")

            // The last page, then the one before it.
            let (tail, tailFin) = try await query(bob, id: "p3", "<set xmlns='http://jabber.org/protocol/rsm'><max>2</max><before/></set>")
            #expect(bodies(tail) == ["a5", "b1"] && tailFin[attribute: "complete"] == "false")
            let first = try #require(rsm(tailFin, "first"))
            let (before, beforeFin) = try await query(
                bob, id: "p4", "<set xmlns='http://jabber.org/protocol/rsm'><max>10</max><before>\(first)</before></set>")
            #expect(bodies(before) == ["a1", "a2", "a3", "a4"] && beforeFin[attribute: "complete"] == "true")

            try await alice.send(
                "<iq type='set' id='bad'><query xmlns='urn:xmpp:mam:2'><set xmlns='http://jabber.org/protocol/rsm'><after>nope</after></set></query></iq>")
            let error = try await alice.expect("iq")
            #expect(error.type == "error" && error.stanzaErrorCondition == .itemNotFound)
        }
    }

    @Test func messagesStoredOfflineAreArchivedWithTheirStanzaID() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice", resource: "work")
            try await alice.send("<message to='bob@localhost' type='chat' id='m1'><body>later</body></message>")
            let bob = try await server.login("bob", resource: "home")
            try await bob.send("<presence/>")
            try await bob.expect("presence")
            let offline = try await bob.expect("message")
            let stanzaID = offline.firstChild("stanza-id", namespace: Self.sid)?[attribute: "id"]
            let (results, _) = try await query(bob, id: "q")
            #expect(bodies(results) == ["later"])
            #expect(stanzaID != nil && results.first?.firstChild("result", namespace: Self.mam)?[attribute: "id"] == stanzaID)
        }
    }

    @Test func preferencesRoundTripAndApply() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice", resource: "work")
            let reply = try await alice.query(
                "<iq type='set' id='p'><prefs xmlns='urn:xmpp:mam:2' default='always'><always/><never><jid>bob@localhost</jid></never></prefs></iq>",
                id: "p")
            #expect(reply.type == "result")
            let got = try await alice.query("<iq type='get' id='g'><prefs xmlns='urn:xmpp:mam:2'/></iq>", id: "g")
            let prefs = try #require(got.firstChild("prefs", namespace: Self.mam))
            #expect(prefs[attribute: "default"] == "always")
            #expect(prefs.firstChild("never", namespace: Self.mam)?.firstChild("jid", namespace: Self.mam)?.text == "bob@localhost")
            try await alice.send("<message to='bob@localhost' type='chat'><body>off the record</body></message>")
            let (results, fin) = try await query(alice, id: "q")
            #expect(results.isEmpty && rsm(fin, "count") == "0")
        }
    }

    @Test func theSenderRetractsAndTheArchiveKeepsATombstone() async throws {
        try await TestServer.with { server in
            let bob = try await available(server, "bob", resource: "home")
            let alice = try await server.login("alice", resource: "work")
            try await alice.send(
                "<message to='bob@localhost' type='chat' id='m1'><body>oops</body><origin-id xmlns='urn:xmpp:sid:0' id='o1'/></message>")
            try await bob.expect("message")
            // Bob cannot retract alice's message.
            try await bob.send("<message to='alice@localhost' type='chat'><retract xmlns='urn:xmpp:message-retract:1' id='o1'/></message>")
            // Answered after that message was routed (one stream, in order): alice's query
            // below then finds it archived, however busy bob's event loop is.
            _ = try await bob.query("<iq type='get' id='routed'><ping xmlns='urn:xmpp:ping'/></iq>", id: "routed")
            try await alice.send(
                "<message to='bob@localhost' type='chat' id='r1'><retract xmlns='urn:xmpp:message-retract:1' id='o1'/><body>retracted</body></message>")
            let retraction = try await bob.expect("message")
            #expect(retraction.firstChild("retract", namespace: "urn:xmpp:message-retract:1") != nil)
            for client in [alice, bob] {
                let (results, _) = try await query(client, id: "q")
                let first = try #require(results.first?.firstChild("result", namespace: Self.mam)?
                    .firstChild("forwarded", namespace: "urn:xmpp:forward:0")?.firstChild("message"))
                #expect(first.firstChild("body") == nil)
                #expect(first.firstChild("retracted", namespace: "urn:xmpp:message-retract:1") != nil)
                // Named as the clients holding it know it: its id, type and origin-id stay.
                #expect(first[attribute: "id"] == "m1" && first.type == "chat")
                #expect(first.firstChild("origin-id", namespace: "urn:xmpp:sid:0")?[attribute: "id"] == "o1")
                #expect(results.count == 3)
            }
        }
    }

    @Test func theAccountAdvertisesMAM() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            let reply = try await alice.query(
                "<iq type='get' id='d' to='alice@localhost'><query xmlns='http://jabber.org/protocol/disco#info'/></iq>", id: "d")
            let features = reply.firstChild("query")?.elements.compactMap { $0[attribute: "var"] } ?? []
            #expect(features.contains("urn:xmpp:mam:2") && features.contains("urn:xmpp:sid:0"))
        }
    }
}
