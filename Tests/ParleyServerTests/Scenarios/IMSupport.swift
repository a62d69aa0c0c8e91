import ParleyCore
import Testing

/// Helpers for the RFC 6121 scenarios: IM clients that asked for their roster (so they get
/// roster pushes) and may be available, a round trip that proves "nothing else arrived"
/// without sleeping, and matchers for pushes and presence.
enum IM {
    static let roster = "jabber:iq:roster"
    static let blocking = "urn:xmpp:blocking"
    static let delay = "urn:xmpp:delay"
}

extension TestServer {
    /// Logs `username` in on `resource`, fetches the roster (an "interested resource",
    /// RFC 6121 §2.1.6) and, unless `available` is false, sends initial presence with
    /// `priority` and takes its reflection. What the initial presence brings besides
    /// (contacts' presence, pending requests, offline messages) is left for the test.
    func im(_ username: String, _ resource: String = "r", available: Bool = true, priority: Int? = nil) async throws -> TestClient {
        let client = try await login(username, resource: resource)
        _ = try await client.rosterGet()
        if available { try await client.available(priority: priority) }
        return client
    }
}

extension TestServer {
    /// Several available resources of one account, each having received the presence of
    /// all the others (and nothing else read), so they start with nothing pending.
    func resources(_ username: String, _ resources: [(String, Int)]) async throws -> [TestClient] {
        var clients: [TestClient] = []
        for (resource, priority) in resources {
            clients.append(try await im(username, resource, priority: priority))
        }
        for client in clients {
            let others = try await client.nextElements(clients.count - 1)
            #expect(others.allSatisfy { $0.name == "presence" && $0.type == nil }, "\(others.map { $0.xmlString() })")
        }
        return clients
    }
}

extension TestServer {
    /// Waits until the account has no session left bound (closing a socket ends its
    /// session a moment later), so a new login does not meet the old one's presence.
    func waitUntilOffline(_ username: String) async throws {
        let account = try JID("\(username)@\(Self.domain)")
        let deadline = ContinuousClock.now + TestClient.defaultTimeout
        while !running.context.sessions.sessions(of: account).isEmpty {
            guard ContinuousClock.now < deadline else { throw ScenarioFailure("\(username) still has sessions") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Closes the clients' connections and waits until the account has no session.
    func disconnect(_ username: String, _ clients: TestClient...) async throws {
        for client in clients { await client.close() }
        try await waitUntilOffline(username)
    }
}

extension TestClient {
    /// `jabber:iq:roster` get; returns the result (its `<query/>` may be absent).
    @discardableResult
    func rosterGet(ver: String? = nil) async throws -> XMLElement {
        let id = "roster-\(UInt32.random(in: 0 ... .max))"
        let verAttribute = ver.map { " ver='\($0)'" } ?? ""
        let reply = try await query("<iq type='get' id='\(id)'><query xmlns='jabber:iq:roster'\(verAttribute)/></iq>", id: id)
        guard reply.type == "result" else { throw ScenarioFailure("roster get failed: \(reply.xmlString())") }
        return reply
    }

    /// The items of a fresh roster get, by JID.
    func rosterItems() async throws -> [String: XMLElement] {
        let reply = try await rosterGet()
        let items = reply.firstChild("query", namespace: IM.roster)?.children("item", namespace: IM.roster) ?? []
        return Dictionary(items.map { ($0[attribute: "jid"] ?? "", $0) }, uniquingKeysWith: { $1 })
    }

    /// A roster set of one item; returns the reply (result or error), which must come next.
    func rosterSet(_ item: String) async throws -> XMLElement {
        let id = "set-\(UInt32.random(in: 0 ... .max))"
        return try await query("<iq type='set' id='\(id)'><query xmlns='jabber:iq:roster'>\(item)</query></iq>", id: id)
    }

    /// A roster removal; returns the reply and what came with it before the next round
    /// trip (the push may come before or after the result: RFC 6121 does not order them).
    func rosterRemove(_ jid: String) async throws -> (reply: XMLElement, others: [XMLElement]) {
        let id = "remove-\(UInt32.random(in: 0 ... .max))"
        try await send("<iq type='set' id='\(id)'><query xmlns='jabber:iq:roster'><item jid='\(jid)' subscription='remove'/></query></iq>")
        var others: [XMLElement] = []
        while true {
            let element = try await nextElement()
            if element.name == "iq", element.id == id {
                // The removal's other effects were all sent before its result; a round trip
                // collects those that came after it.
                return (element, others + (try await sync()))
            }
            others.append(element)
        }
    }

    /// Sends available presence and expects the server to reflect it (RFC 6121 §4.2.2).
    func available(priority: Int? = nil, status: String? = nil) async throws {
        var children = ""
        if let priority { children += "<priority>\(priority)</priority>" }
        if let status { children += "<status>\(status)</status>" }
        try await send("<presence>\(children)</presence>")
        let reflected = try await expect("presence")
        guard reflected.type == nil, reflected.firstChild("status")?.text == status else {
            throw ScenarioFailure("expected my own presence back, got \(reflected.xmlString())")
        }
    }

    /// A round trip to the server (XEP-0199): everything this client sent before was handled
    /// and everything delivered to it before is returned, in order.
    @discardableResult
    func sync(timeout: Duration = defaultTimeout) async throws -> [XMLElement] {
        let id = "sync-\(UInt32.random(in: 0 ... .max))"
        try await send("<iq type='get' id='\(id)' to='localhost'><ping xmlns='urn:xmpp:ping'/></iq>")
        var before: [XMLElement] = []
        while true {
            let element = try await nextElement(timeout: timeout)
            if element.name == "iq", element.id == id { return before }
            before.append(element)
        }
    }

    /// Nothing was delivered to this client up to now: the round trip comes back alone.
    func expectNothingPending(_ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let extra = try await sync()
        #expect(extra.isEmpty, "\(comment?.rawValue ?? "unexpected"): \(extra.map { $0.xmlString() })", sourceLocation: sourceLocation)
    }

    /// The next element must be a roster push (RFC 6121 §2.1.6) of one item for `jid`;
    /// returns the item.
    @discardableResult
    func expectPush(
        _ jid: String, subscription: String, ask: Bool = false, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> XMLElement {
        let element = try await nextElement()
        guard let item = element.pushedItem else { throw ScenarioFailure("expected a roster push for \(jid), got \(element.xmlString())") }
        #expect(element.isPush(jid, subscription: subscription, ask: ask), "got \(element.xmlString())", sourceLocation: sourceLocation)
        return item
    }

    /// The next element must be presence from `from` of `type` (nil: available).
    @discardableResult
    func expectPresence(from: String, type: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) async throws -> XMLElement {
        let element = try await expect("presence")
        #expect(element.from == from && element.type == type, "got \(element.xmlString())", sourceLocation: sourceLocation)
        return element
    }

    /// The next `count` elements, whatever their order (when they come from different
    /// sessions' work).
    func nextElements(_ count: Int) async throws -> [XMLElement] {
        var elements: [XMLElement] = []
        for _ in 0..<count { elements.append(try await nextElement()) }
        return elements
    }

    /// The next message, skipping nothing.
    @discardableResult
    func expectMessage(id: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> XMLElement {
        let message = try await expect("message")
        #expect(message.id == id, "got \(message.xmlString())", sourceLocation: sourceLocation)
        return message
    }

    func sendMessage(to: String, id: String, type: String = "chat", body: String? = nil) async throws {
        try await send("<message to='\(to)' type='\(type)' id='\(id)'><body>\(body ?? id)</body></message>")
    }
}

extension XMLElement {
    /// The item of a roster push: `<iq type='set'><query xmlns='jabber:iq:roster'><item/>`.
    var pushedItem: XMLElement? {
        guard name == "iq", type == "set", let query = firstChild("query", namespace: IM.roster) else { return nil }
        let items = query.children("item", namespace: IM.roster)
        return items.count == 1 ? items[0] : nil
    }

    func isPush(_ jid: String, subscription: String, ask: Bool = false) -> Bool {
        guard let item = pushedItem else { return false }
        // A push comes from the account itself or the server, never from elsewhere (§2.1.6).
        return (from == nil || from == to.map { String($0.prefix { $0 != "/" }) })
            && item[attribute: "jid"] == jid && item[attribute: "subscription"] == subscription
            && (item[attribute: "ask"] == "subscribe") == ask
    }

    func isPresence(from: String, type: String? = nil) -> Bool {
        name == "presence" && self.from == from && self.type == type
    }
}

extension Array where Element == XMLElement {
    /// The one element matching, failing the test if there is not exactly one.
    func one(_ what: String, sourceLocation: SourceLocation = #_sourceLocation, _ matches: (XMLElement) -> Bool) throws -> XMLElement {
        let found = filter(matches)
        guard found.count == 1 else {
            throw ScenarioFailure("expected exactly one \(what) among \(map { $0.xmlString() })")
        }
        return found[0]
    }
}

/// Subscription states reached over the wire, for scenarios that start from them.
enum Subscribe {
    /// `user` asks `contact` for a subscription and `contact` approves, both quiet sessions
    /// (no roster fetched, not available), so nothing is left to read on either.
    static func establish(_ server: TestServer, _ user: String, to contact: String) async throws {
        let a = try await server.login(user, resource: "setup")
        let b = try await server.login(contact, resource: "setup")
        try await a.send("<presence to='\(contact)@localhost' type='subscribe'/>")
        try await a.expectNothingPending()
        try await b.send("<presence to='\(user)@localhost' type='subscribed'/>")
        try await b.expectNothingPending()
        try await server.disconnect(user, a)
        try await server.disconnect(contact, b)
    }

    /// Alice and Bob subscribed both ways, both online (resource `r`), each having received
    /// the other's presence: the opening of every "from Both" scenario.
    static func mutualOnline(_ server: TestServer) async throws -> (alice: TestClient, bob: TestClient) {
        try await establish(server, "alice", to: "bob")
        try await establish(server, "bob", to: "alice")
        let bob = try await server.im("bob")
        let alice = try await server.im("alice")
        try await alice.expectPresence(from: "bob@localhost/r")
        try await bob.expectPresence(from: "alice@localhost/r")
        return (alice, bob)
    }

    /// `user` asks `contact`, who does not answer.
    static func request(_ server: TestServer, _ user: String, to contact: String) async throws {
        let a = try await server.login(user, resource: "setup")
        try await a.send("<presence to='\(contact)@localhost' type='subscribe'/>")
        try await a.expectNothingPending()
        try await server.disconnect(user, a)
    }
}
