import ParleyCore
import Testing

/// What the server answers about itself: XEP-0030 disco, XEP-0199 ping, XEP-0092 version.
@Suite struct ServerQueryScenarios {
    static let discoInfo = "http://jabber.org/protocol/disco#info"

    @Test func discoInfoOfTheServerListsItsIdentityAndFeatures() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            let reply = try await alice.query("<iq type='get' id='d1' to='localhost'><query xmlns='\(Self.discoInfo)'/></iq>", id: "d1")
            #expect(reply.type == "result" && reply.from == "localhost")
            let query = try #require(reply.firstChild("query", namespace: Self.discoInfo))
            let identity = try #require(query.firstChild("identity", namespace: Self.discoInfo))
            #expect(identity[attribute: "category"] == "server" && identity[attribute: "type"] == "im")
            let features = Set(query.children("feature", namespace: Self.discoInfo).compactMap { $0[attribute: "var"] })
            for feature in [
                Self.discoInfo, "http://jabber.org/protocol/disco#items", "urn:xmpp:ping", "jabber:iq:version", "jabber:iq:register",
            ] {
                #expect(features.contains(feature), "disco#info lacks \(feature)")
            }
        }
    }

    @Test func discoInfoOfOnesOwnAccountIsAnswered() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            let reply = try await alice.query(
                "<iq type='get' id='d2' to='alice@localhost'><query xmlns='\(Self.discoInfo)'/></iq>", id: "d2")
            #expect(reply.type == "result" && reply.from == "alice@localhost")
            let identity = reply.firstChild("query", namespace: Self.discoInfo)?.firstChild("identity", namespace: Self.discoInfo)
            #expect(identity?[attribute: "category"] == "account")
            // No 'to' means the account itself too.
            let implicit = try await alice.query("<iq type='get' id='d3'><query xmlns='\(Self.discoInfo)'/></iq>", id: "d3")
            #expect(implicit.type == "result")
        }
    }

    @Test func discoInfoOfAnotherAccountIsServiceUnavailable() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            for (to, id) in [("bob@localhost", "d4"), ("nobody@localhost", "d5")] {
                let reply = try await alice.query("<iq type='get' id='\(id)' to='\(to)'><query xmlns='\(Self.discoInfo)'/></iq>", id: id)
                #expect(reply.type == "error" && reply.stanzaErrorCondition == .serviceUnavailable)
            }
        }
    }

    @Test func pingIsAnsweredWithAResult() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            let reply = try await alice.query("<iq type='get' id='p1' to='localhost'><ping xmlns='urn:xmpp:ping'/></iq>", id: "p1")
            #expect(reply.type == "result" && reply.from == "localhost" && reply.elements.isEmpty)
        }
    }

    @Test func versionNamesParley() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            let reply = try await alice.query("<iq type='get' id='v1' to='localhost'><query xmlns='jabber:iq:version'/></iq>", id: "v1")
            let query = try #require(reply.firstChild("query", namespace: "jabber:iq:version"))
            #expect(query.firstChild("name", namespace: "jabber:iq:version")?.text == "Parley")
            #expect(query.firstChild("version", namespace: "jabber:iq:version")?.text.isEmpty == false)
            #expect(query.firstChild("os", namespace: "jabber:iq:version") == nil)
        }
    }
}
