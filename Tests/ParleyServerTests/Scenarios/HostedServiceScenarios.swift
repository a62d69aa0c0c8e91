import ParleyCore
@testable import ParleyServer
import Testing

/// The router serving hosted services: stanzas to a service's domain and the JIDs at it reach
/// the service with `from` stamped, what the service sends meets the same rules as stanzas
/// between accounts (blocking, offline storage), the server's disco#items lists it, and it
/// hears when a session ends.
@Suite struct HostedServiceScenarios {
    private static func withService<T>(_ body: (TestServer, RecordingService) async throws -> T) async throws -> T {
        let service = RecordingService()
        return try await TestServer.with(accounts: TestServer.threeAccounts, hostedServices: [service]) { server in
            try await body(server, service)
        }
    }

    @Test func stanzasToTheServiceAndItsJIDsReachItWithFromStampedAndItsRepliesComeBack() async throws {
        try await Self.withService { server, service in
            let alice = try await server.im("alice")
            try await alice.send(
                "<message to='room@service.localhost/nick' from='mallory@localhost/x' type='chat' id='m1'><body>hi</body></message>")
            let echo = try await alice.expect("message")
            #expect(echo.from == "room@service.localhost/nick" && echo.to == "alice@localhost/r", "\(echo.xmlString())")
            #expect(echo.firstChild("body")?.text == "echo: hi")
            let (stanza, from) = try #require(service.stanzas.first)
            #expect(from.description == "alice@localhost/r" && stanza.from == "alice@localhost/r", "\(stanza.xmlString())")
            #expect(stanza.to == "room@service.localhost/nick" && stanza.id == "m1")

            let info = try await alice.query(
                "<iq type='get' id='i1' to='service.localhost'><query xmlns='http://jabber.org/protocol/disco#info'/></iq>", id: "i1")
            #expect(info.type == "result" && info.from == "service.localhost", "\(info.xmlString())")
            let identity = info.firstChild("query", namespace: XMLNamespace.discoInfo)?.firstChild("identity")
            #expect(identity?[attribute: "category"] == "component", "\(info.xmlString())")

            // An iq result addressed to a JID at the service is the service's too.
            try await alice.send("<iq type='result' id='r1' to='room@service.localhost'/>")
            try await service.waitFor("the iq result") {
                if case .stanza(let iq, let from) = $0 { iq.name == "iq" && iq.id == "r1" && from.description == "alice@localhost/r" } else { false }
            }
            let missingID = try await alice.query("<iq type='get' to='service.localhost'><ping xmlns='urn:xmpp:ping'/></iq>", id: "")
            #expect(missingID.stanzaErrorCondition == .badRequest, "\(missingID.xmlString())")
        }
    }

    @Test func theServersDiscoItemsListTheService() async throws {
        try await Self.withService { server, _ in
            let alice = try await server.im("alice")
            let items = try await alice.query(
                "<iq type='get' id='d1' to='localhost'><query xmlns='http://jabber.org/protocol/disco#items'/></iq>", id: "d1")
            let listed = items.firstChild("query", namespace: XMLNamespace.discoItems)?.children("item") ?? []
            #expect(listed.count == 1, "\(items.xmlString())")
            #expect(listed.first?[attribute: "jid"] == "service.localhost" && listed.first?[attribute: "name"] == "Recorder")
        }
    }

    @Test func aMessageTheServiceSendsToAnOfflineAccountIsStoredOffline() async throws {
        try await Self.withService { server, service in
            service.send(
                XMLElement(
                    "message", namespace: XMLNamespace.client,
                    ["from": "room@service.localhost", "to": "bob@localhost", "type": "normal", "id": "inv1"],
                    [XMLElement("body", text: "join us")]))
            await server.running.offline.writer.waitUntilIdle(deadline: ContinuousClock.now + .seconds(5))
            let bob = try await server.im("bob")
            let stored = try await bob.expectMessage(id: "inv1")
            #expect(stored.from == "room@service.localhost" && stored.firstChild("body")?.text == "join us")
            #expect(stored.firstChild("delay", namespace: IM.delay) != nil, "\(stored.xmlString())")
        }
    }

    @Test func aGroupchatMessageToAResourceThatIsGoneComesBackToTheServiceAsAnError() async throws {
        try await Self.withService { server, service in
            service.send(
                XMLElement(
                    "message", namespace: XMLNamespace.client,
                    ["from": "room@service.localhost/nick", "to": "bob@localhost/gone", "type": "groupchat", "id": "g1"],
                    [XMLElement("body", text: "hello")]))
            let event = try await service.waitFor("an error") {
                if case .stanza(let stanza, _) = $0 { stanza.type == "error" } else { false }
            }
            guard case .stanza(let error, let from) = event else { return }
            #expect(error.id == "g1" && from.description == "bob@localhost/gone" && error.to == "room@service.localhost/nick")
            #expect(error.stanzaErrorCondition == .serviceUnavailable, "\(error.xmlString())")
        }
    }

    /// RFC 6121 §8.5.3.2.1 for what a service sends: to a resource that is gone, a normal
    /// message comes back as an error, headline and error messages are dropped, and only a
    /// chat message goes to the account's other resource; an error to the bare JID is dropped.
    @Test func onlyAChatMessageToAResourceThatIsGoneReachesAnotherResource() async throws {
        try await Self.withService { server, service in
            let bob = try await server.im("bob", "here")
            func send(_ type: String, to: String = "bob@localhost/gone", id: String) {
                var children = [XMLElement("body", text: "hello")]
                if type == "error" {
                    children.append(
                        XMLElement("error", ["type": "cancel"], [XMLElement("item-not-found", namespace: "urn:ietf:params:xml:ns:xmpp-stanzas")]))
                }
                service.send(
                    XMLElement(
                        "message", namespace: XMLNamespace.client,
                        ["from": "room@service.localhost/nick", "to": to, "type": type, "id": id], children))
            }
            send("normal", id: "n1")
            let event = try await service.waitFor("an error") {
                if case .stanza(let stanza, _) = $0 { stanza.type == "error" } else { false }
            }
            guard case .stanza(let error, _) = event else { return }
            #expect(error.id == "n1" && error.stanzaErrorCondition == .serviceUnavailable, "\(error.xmlString())")
            send("headline", id: "h1")
            send("error", id: "e1")
            send("error", to: "bob@localhost", id: "e2")
            send("chat", id: "c1")
            let chat = try await bob.expectMessage(id: "c1")
            #expect(chat.to == "bob@localhost/gone", "\(chat.xmlString())")
            try await bob.expectNothingPending()
        }
    }

    @Test func blockingAppliesBothWays() async throws {
        try await Self.withService { server, service in
            let alice = try await server.im("alice")
            let block = try await alice.query(
                "<iq type='set' id='b1'><block xmlns='urn:xmpp:blocking'><item jid='service.localhost'/></block></iq>", id: "b1")
            #expect(block.type == "result")
            try await alice.sendMessage(to: "room@service.localhost", id: "a1")
            let refused = try await alice.expect("message")
            #expect(refused.id == "a1" && refused.stanzaErrorCondition == .notAcceptable, "\(refused.xmlString())")
            service.send(
                XMLElement(
                    "message", namespace: XMLNamespace.client,
                    ["from": "room@service.localhost", "to": "alice@localhost", "type": "chat", "id": "s1"],
                    [XMLElement("body", text: "spam")]))
            let bounced = try await service.waitFor("the bounce") {
                if case .stanza(let stanza, _) = $0 { stanza.id == "s1" } else { false }
            }
            guard case .stanza(let error, _) = bounced else { return }
            #expect(error.type == "error" && error.stanzaErrorCondition == .serviceUnavailable, "\(error.xmlString())")
            try await alice.expectNothingPending("a blocked service's message never arrives")
            #expect(!service.stanzas.contains { $0.0.id == "a1" }, "the refused message never reached the service")
        }
    }

    @Test func directedPresenceReachesTheServiceAndSoDoesTheEndOfTheSession() async throws {
        try await Self.withService { server, service in
            let alice = try await server.im("alice")
            try await alice.send("<presence to='room@service.localhost/Alice'><x xmlns='http://jabber.org/protocol/muc'/></presence>")
            try await service.waitFor("the join") {
                if case .stanza(let presence, let from) = $0 {
                    presence.name == "presence" && presence.type == nil && from.description == "alice@localhost/r"
                } else { false }
            }
            await alice.close()
            try await service.waitFor("unavailable presence") {
                if case .stanza(let presence, let from) = $0 {
                    presence.name == "presence" && presence.type == "unavailable" && from.description == "alice@localhost/r"
                        && presence.to == "room@service.localhost/Alice"
                } else { false }
            }
            try await service.waitFor("the session's end") {
                if case .sessionEnded(let jid) = $0 { jid.description == "alice@localhost/r" } else { false }
            }
        }
    }

    @Test func unavailablePresenceReachesTheServicesTheUserSentPresenceTo() async throws {
        try await Self.withService { server, service in
            let bob = try await server.im("bob")
            try await bob.send("<presence to='room@service.localhost/Bob'/>")
            try await bob.send("<presence type='unavailable'/>")
            _ = try await bob.expectPresence(from: "bob@localhost/r", type: "unavailable")
            try await service.waitFor("unavailable presence") {
                if case .stanza(let presence, _) = $0 { presence.type == "unavailable" && presence.to == "room@service.localhost/Bob" } else { false }
            }
            #expect(!service.received.contains { if case .sessionEnded = $0 { true } else { false } }, "the session is still there")
        }
    }

    @Test func otherDomainsAreStillRemote() async throws {
        try await Self.withService { server, service in
            let alice = try await server.im("alice")
            try await alice.sendMessage(to: "room@conference.example.org", id: "x1")
            let bounced = try await alice.expect("message")
            #expect(bounced.stanzaErrorCondition == .remoteServerNotFound, "\(bounced.xmlString())")
            service.send(
                XMLElement(
                    "message", namespace: XMLNamespace.client,
                    ["from": "room@service.localhost", "to": "someone@example.org", "type": "chat", "id": "x2"],
                    [XMLElement("body", text: "out")]))
            let error = try await service.waitFor("remote-server-not-found") {
                if case .stanza(let stanza, _) = $0 { stanza.id == "x2" && stanza.type == "error" } else { false }
            }
            guard case .stanza(let stanza, _) = error else { return }
            #expect(stanza.stanzaErrorCondition == .remoteServerNotFound)
        }
    }
}
