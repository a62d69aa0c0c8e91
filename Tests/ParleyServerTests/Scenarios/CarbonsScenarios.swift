import ParleyCore
import Testing

/// XEP-0280 message carbons.
@Suite struct CarbonsScenarios {
    static let carbons = "urn:xmpp:carbons:2"

    private func available(_ server: TestServer, _ username: String, resource: String, carbons: Bool) async throws -> TestClient {
        let client = try await server.login(username, resource: resource)
        if carbons {
            let reply = try await client.query("<iq type='set' id='c'><enable xmlns='urn:xmpp:carbons:2'/></iq>", id: "c")
            #expect(reply.type == "result")
        }
        try await client.send("<presence/>")
        try await client.expect("presence")
        return client
    }

    /// The next message, past any presence the account's resources exchange.
    @discardableResult
    private func message(_ client: TestClient) async throws -> XMLElement {
        while true {
            let element = try await client.nextElement()
            if element.name == "presence" { continue }
            guard element.name == "message" else { throw ScenarioFailure("expected a message, got \(element.xmlString())") }
            return element
        }
    }

    /// Nothing but presence arrives for `duration`.
    private func noMessage(_ client: TestClient, for duration: Duration) async throws {
        let deadline = ContinuousClock.now + duration
        while ContinuousClock.now < deadline {
            guard let event = await client.events.next(timeout: deadline - ContinuousClock.now) else { return }
            if case .element(let element) = event, element.name == "presence" { continue }
            throw ScenarioFailure("expected nothing, got \(event)")
        }
    }

    private func forwarded(_ carbon: XMLElement, _ kind: String) throws -> XMLElement {
        try #require(
            carbon.firstChild(kind, namespace: Self.carbons)?.firstChild("forwarded", namespace: "urn:xmpp:forward:0")?
                .firstChild("message"), "\(carbon.xmlString())")
    }

    @Test func receivedAndSentCopiesGoToOtherResourcesThatEnabledCarbons() async throws {
        try await TestServer.with { server in
            let phone = try await available(server, "bob", resource: "phone", carbons: true)
            let laptop = try await available(server, "bob", resource: "laptop", carbons: true)
            let alice = try await available(server, "alice", resource: "work", carbons: false)

            try await alice.send("<message to='bob@localhost/laptop' type='chat' id='m1'><body>to the laptop</body></message>")
            let direct = try await message(laptop)
            #expect(direct.firstChild("body")?.text == "to the laptop")
            let carbon = try await message(phone)
            #expect(carbon.from == "bob@localhost" && carbon.to == "bob@localhost/phone")
            let copy = try forwarded(carbon, "received")
            #expect(copy.from == "alice@localhost/work" && copy.firstChild("body")?.text == "to the laptop")
            #expect(copy.firstChild("stanza-id", namespace: "urn:xmpp:sid:0")?[attribute: "by"] == "bob@localhost")

            try await phone.send("<message to='alice@localhost' type='chat' id='m2'><body>from the phone</body></message>")
            try await message(alice)
            let sent = try await message(laptop)
            #expect(sent.from == "bob@localhost")
            let sentCopy = try forwarded(sent, "sent")
            #expect(sentCopy.from == "bob@localhost/phone" && sentCopy.to == "alice@localhost")
            try await noMessage(phone, for: .milliseconds(200))
        }
    }

    @Test func privateAndNoCopyMessagesAndDisabledSessionsGetNoCarbons() async throws {
        try await TestServer.with { server in
            let phone = try await available(server, "bob", resource: "phone", carbons: true)
            let laptop = try await available(server, "bob", resource: "laptop", carbons: false)
            let alice = try await available(server, "alice", resource: "work", carbons: false)

            try await alice.send(
                "<message to='bob@localhost/laptop' type='chat'><body>secret</body><private xmlns='urn:xmpp:carbons:2'/></message>")
            try await message(laptop)
            try await alice.send("<message to='bob@localhost/laptop' type='chat'><body>no copy</body><no-copy xmlns='urn:xmpp:hints'/></message>")
            try await message(laptop)
            // The laptop did not enable carbons: no sent copy for it.
            try await phone.send("<message to='alice@localhost' type='chat'><body>hi</body></message>")
            try await message(alice)
            try await noMessage(phone, for: .milliseconds(200))
            try await noMessage(laptop, for: .milliseconds(100))

            let reply = try await phone.query("<iq type='set' id='d'><disable xmlns='urn:xmpp:carbons:2'/></iq>", id: "d")
            #expect(reply.type == "result")
            try await alice.send("<message to='bob@localhost/laptop' type='chat'><body>again</body></message>")
            try await message(laptop)
            try await noMessage(phone, for: .milliseconds(200))
        }
    }

    @Test func theServerAdvertisesCarbons() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            let reply = try await alice.query(
                "<iq type='get' id='d' to='localhost'><query xmlns='http://jabber.org/protocol/disco#info'/></iq>", id: "d")
            let features = reply.firstChild("query")?.elements.compactMap { $0[attribute: "var"] } ?? []
            #expect(features.contains("urn:xmpp:carbons:2"))
        }
    }
}
