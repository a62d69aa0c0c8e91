import ParleyCore
import ParleyTestSupport
import Testing

@testable import ParleyServer

/// XEP-0049 private XML storage on the wire (with XEP-0048 bookmarks as the usual payload):
/// keyed by element name and namespace, the account's own, reserved namespaces and limits
/// refused with a reason, kept across a restart.
@Suite struct PrivateStorageScenarios {
    static let namespace = "jabber:iq:private"
    static let bookmarks =
        "<storage xmlns='storage:bookmarks'><conference jid='tea@conference.localhost' autojoin='true' name='Tea party'><nick>alice</nick></conference></storage>"

    static func request(_ client: TestClient, _ type: String, _ content: String, to: String? = nil, id: String = "p") async throws -> XMLElement {
        let address = to.map { " to='\($0)'" } ?? ""
        return try await client.query("<iq type='\(type)' id='\(id)'\(address)><query xmlns='jabber:iq:private'>\(content)</query></iq>", id: id)
    }

    /// The elements inside the result's `<query/>`.
    static func stored(_ reply: XMLElement) throws -> [XMLElement] {
        #expect(reply.type == "result", "\(reply.xmlString())")
        let query = try #require(reply.firstChild("query", namespace: namespace), "\(reply.xmlString())")
        try SchemaValidator.shared.validate(query.xmlString())
        return query.elements
    }

    static func element(_ xml: String) throws -> XMLElement {
        try #require(ProfileXML.parse(xml), "not XML: \(xml)")
    }

    @Test func bookmarksAreStoredAndFoundByNameAndNamespace() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            // Nothing stored: the empty element comes back as asked.
            let none = try await Self.request(alice, "get", "<storage xmlns='storage:bookmarks'/>")
            #expect(try Self.stored(none) == [XMLElement("storage", namespace: "storage:bookmarks")])

            #expect(try await Self.request(alice, "set", Self.bookmarks).type == "result")
            let found = try await Self.request(alice, "get", "<storage xmlns='storage:bookmarks'/>")
            #expect(try Self.stored(found) == [try Self.element(Self.bookmarks)])
            // Same name, other namespace; same namespace, other name: different elements.
            #expect(try Self.stored(try await Self.request(alice, "get", "<storage xmlns='storage:rosternotes'/>"))
                == [XMLElement("storage", namespace: "storage:rosternotes")])
            #expect(try Self.stored(try await Self.request(alice, "get", "<other xmlns='storage:bookmarks'/>"))
                == [XMLElement("other", namespace: "storage:bookmarks")])

            // Several elements of one namespace in one set (§2.3), and in one get.
            let a = "<a xmlns='example:prefs' theme='dark'/>", b = "<b xmlns='example:prefs'><size>12</size></b>"
            #expect(try await Self.request(alice, "set", a + b).type == "result")
            let both = try await Self.request(alice, "get", "<b xmlns='example:prefs'/><a xmlns='example:prefs'/>")
            #expect(try Self.stored(both) == [try Self.element(b), try Self.element(a)])

            // An empty element clears what was stored under its name.
            #expect(try await Self.request(alice, "set", "<storage xmlns='storage:bookmarks'/>").type == "result")
            #expect(try Self.stored(try await Self.request(alice, "get", "<storage xmlns='storage:bookmarks'/>"))
                == [XMLElement("storage", namespace: "storage:bookmarks")])
        }
    }

    @Test func malformedRequestsAndReservedNamespacesAreRefused() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            let cases: [(type: String, content: String, condition: StanzaErrorCondition)] = [
                ("get", "", .notAcceptable),
                ("set", "", .notAcceptable),
                ("set", "<x xmlns='jabber:client'>hi</x>", .notAcceptable),
                ("set", "<x xmlns='jabber:server'>hi</x>", .notAcceptable),
                ("get", "<x xmlns='jabber:client'/>", .notAcceptable),
                ("set", "<vCard xmlns='vcard-temp'><FN>Alice</FN></vCard>", .notAcceptable),
                ("set", "<query xmlns='http://jabber.org/protocol/disco#info'/>", .notAcceptable),
                // No namespace of its own: it is in jabber:iq:private.
                ("set", "<prefs>x</prefs>", .notAcceptable),
                ("get", "<a xmlns='example:one'/><b xmlns='example:two'/>", .badRequest),
                ("set", "<a xmlns='example:one'>1</a><a xmlns='example:one'>2</a>", .badRequest),
            ]
            for (index, item) in cases.enumerated() {
                let reply = try await Self.request(alice, item.type, item.content, id: "bad\(index)")
                #expect(reply.type == "error" && reply.stanzaErrorCondition == item.condition, "\(item.content): \(reply.xmlString())")
                #expect(reply.stanzaErrorText?.isEmpty == false, "\(item.content) gets a reason: \(reply.xmlString())")
            }
            let reserved = try await Self.request(alice, "set", "<x xmlns='jabber:client'>hi</x>")
            #expect(reserved.stanzaErrorText?.contains("jabber:client") == true, "\(reserved.xmlString())")
            // Nothing of it was stored.
            #expect(try await server.running.storage.privateXML(of: "alice", [("x", "jabber:client"), ("a", "example:one")]) == [nil, nil])
        }
    }

    @Test func anotherUsersStorageIsForbidden() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            let bob = try await server.login("bob")
            #expect(try await Self.request(alice, "set", Self.bookmarks).type == "result")
            for type in ["get", "set"] {
                let reply = try await Self.request(bob, type, Self.bookmarks, to: "alice@localhost", id: "o-\(type)")
                #expect(reply.type == "error" && reply.stanzaErrorCondition == .forbidden, "\(reply.xmlString())")
                #expect(reply.from == "alice@localhost")
            }
            // To one's own bare JID is one's own storage.
            let own = try await Self.request(alice, "get", "<storage xmlns='storage:bookmarks'/>", to: "alice@localhost")
            #expect(try Self.stored(own) == [try Self.element(Self.bookmarks)])
        }
    }

    @Test func sizeAndCountLimitsAreEnforced() async throws {
        try await TestServer.with({
            $0.privateStorage.maxElementBytes = 1_000
            $0.privateStorage.maxElements = 2
        }) { server in
            let alice = try await server.login("alice")
            let big = "<big xmlns='example:ns'>\(String(repeating: "y", count: 1_000))</big>"
            let tooBig = try await Self.request(alice, "set", big)
            #expect(tooBig.type == "error" && tooBig.stanzaErrorCondition == .notAcceptable, "\(tooBig.xmlString())")
            #expect(tooBig.stanzaErrorText?.contains("1000 bytes") == true, "\(tooBig.xmlString())")

            #expect(try await Self.request(alice, "set", "<one xmlns='example:ns'>1</one>").type == "result")
            #expect(try await Self.request(alice, "set", "<two xmlns='example:ns'>2</two>").type == "result")
            let third = try await Self.request(alice, "set", "<three xmlns='example:ns'>3</three>")
            #expect(third.type == "error" && third.stanzaErrorCondition == .notAcceptable, "\(third.xmlString())")
            // A get naming more than an account can hold is refused before any lookup.
            let many = try await Self.request(alice, "get", "<one xmlns='example:ns'/><two xmlns='example:ns'/><x xmlns='example:ns'/>")
            #expect(many.type == "error" && many.stanzaErrorCondition == .notAcceptable, "\(many.xmlString())")
            #expect(many.stanzaErrorText?.contains("up to 2 elements") == true, "\(many.xmlString())")
            // Replacing one at the limit still works; clearing one makes room.
            #expect(try await Self.request(alice, "set", "<two xmlns='example:ns'>2b</two>").type == "result")
            #expect(try await Self.request(alice, "set", "<one xmlns='example:ns'/>").type == "result")
            #expect(try await Self.request(alice, "set", "<three xmlns='example:ns'>3</three>").type == "result")
        }
    }

    @Test func storedElementsSurviveARestart() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            #expect(try await Self.request(alice, "set", Self.bookmarks).type == "result")
            await alice.close()
            try await server.restart()
            let again = try await server.login("alice")
            let found = try await Self.request(again, "get", "<storage xmlns='storage:bookmarks'/>")
            #expect(try Self.stored(found) == [try Self.element(Self.bookmarks)])
        }
    }
}
