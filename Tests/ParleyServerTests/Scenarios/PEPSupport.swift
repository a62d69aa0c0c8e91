import ParleyCore
import Testing

@testable import ParleyServer

/// Helpers for the PEP scenarios (XEP-0163): clients that announce entity capabilities
/// (XEP-0115) and answer the server's disco#info query, publish and read items, and
/// matchers for event notifications.
enum PEP {
    static let pubsub = "http://jabber.org/protocol/pubsub"
    static let event = "http://jabber.org/protocol/pubsub#event"
    static let owner = "http://jabber.org/protocol/pubsub#owner"
    static let errors = "http://jabber.org/protocol/pubsub#errors"
    static let caps = "http://jabber.org/protocol/caps"
    static let nick = "http://jabber.org/protocol/nick"
    static let capsNode = "https://parley.example/test-client"

    /// The disco#info a test client answers with: `+notify` for each of `notify`.
    static func discoInfo(notify: [String]) -> String {
        let features = ["http://jabber.org/protocol/caps", "http://jabber.org/protocol/disco#info"] + notify.map { $0 + "+notify" }
        return "<query xmlns='http://jabber.org/protocol/disco#info'><identity category='client' type='pc' name='Parley test'/>"
            + features.map { "<feature var='\($0)'/>" }.joined() + "</query>"
    }

    /// The XEP-0115 ver of that disco#info (the algorithm is checked against the XEP's own
    /// examples in EntityCapabilitiesTests).
    static func ver(notify: [String]) throws -> String {
        let query = try EntityCapabilitiesTests.query(discoInfo(notify: notify))
        return try #require(EntityCapabilities.sha1Ver(of: query))
    }

    static func nick(_ name: String) -> String {
        "<nick xmlns='\(nick)'>\(name)</nick>"
    }

    static func publishOptions(_ fields: [String: String]) -> String {
        "<publish-options><x xmlns='jabber:x:data' type='submit'>"
            + "<field var='FORM_TYPE' type='hidden'><value>http://jabber.org/protocol/pubsub#publish-options</value></field>"
            + fields.sorted { $0.key < $1.key }.map { "<field var='\($0.key)'><value>\($0.value)</value></field>" }.joined()
            + "</x></publish-options>"
    }
}

extension TestClient {
    /// Sends an iq and returns its reply, with whatever arrived before it.
    func exchange(_ iq: String, id: String) async throws -> (reply: XMLElement, before: [XMLElement]) {
        try await send(iq)
        var before: [XMLElement] = []
        while true {
            let element = try await nextElement()
            if element.name == "iq", element.id == id, element.type == "result" || element.type == "error" { return (element, before) }
            before.append(element)
        }
    }

    /// Sends available presence announcing caps with `+notify` for `notify` (or a given,
    /// perhaps wrong, `ver`), answers the server's disco#info query if one comes (`queried`
    /// says whether one must), and returns once the server has taken the answer in, with
    /// whatever else arrived meanwhile.
    @discardableResult
    func availableWithCaps(
        _ server: TestServer, as jid: String, notify: [String], ver: String? = nil, queried: Bool = true,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> [XMLElement] {
        let ver = try ver ?? PEP.ver(notify: notify)
        try await send("<presence><c xmlns='\(PEP.caps)' hash='sha-1' node='\(PEP.capsNode)' ver='\(ver)'/></presence>")
        let me = try JID(jid)
        var others: [XMLElement] = []
        var reflected = false
        var query: XMLElement? = nil
        while !reflected || (queried && query == nil) {
            let element = try await nextElement()
            if element.name == "presence", element.from == me.description, element.type == nil {
                reflected = true
            } else if element.name == "iq", element.type == "get", element.firstChild("query", namespace: XMLNamespace.discoInfo) != nil {
                query = element
            } else {
                others.append(element)
            }
        }
        if let query {
            guard queried else { throw ScenarioFailure("the server asked for capabilities it should know: \(query.xmlString())") }
            #expect(query.from == "localhost", "the server asks in its own name", sourceLocation: sourceLocation)
            #expect(
                query.firstChild("query", namespace: XMLNamespace.discoInfo)?[attribute: "node"] == "\(PEP.capsNode)#\(ver)",
                sourceLocation: sourceLocation)
            let answer = PEP.discoInfo(notify: notify).replacingOccurrences(
                of: "<query xmlns='http://jabber.org/protocol/disco#info'>",
                with: "<query xmlns='http://jabber.org/protocol/disco#info' node='\(PEP.capsNode)#\(ver)'>")
            try await send("<iq type='result' id='\(query.id ?? "")' to='localhost'>\(answer)</iq>")
        }
        let pep = try #require(server.running.pep)
        let deadline = ContinuousClock.now + TestClient.defaultTimeout
        while !pep.interests.isKnown(me) {
            guard ContinuousClock.now < deadline else { throw ScenarioFailure("the server did not take in \(me)'s capabilities") }
            try await Task.sleep(for: .milliseconds(5))
        }
        return others
    }

    /// Publishes one item; returns the reply and what came before it.
    @discardableResult
    func publish(
        _ node: String, id: String? = nil, _ payload: String, options: [String: String]? = nil
    ) async throws -> (reply: XMLElement, before: [XMLElement]) {
        let iqID = "pub-\(UInt32.random(in: 0 ... .max))"
        let item = id.map { "<item id='\($0)'>" } ?? "<item>"
        return try await exchange(
            "<iq type='set' id='\(iqID)'><pubsub xmlns='\(PEP.pubsub)'><publish node='\(node)'>\(item)\(payload)</item></publish>"
                + (options.map(PEP.publishOptions) ?? "") + "</pubsub></iq>", id: iqID)
    }

    /// An items request (to `owner`'s bare JID) with what goes inside `<items/>`.
    func items(of owner: String, _ node: String, attributes: String = "", _ inside: String = "") async throws -> XMLElement {
        let id = "items-\(UInt32.random(in: 0 ... .max))"
        return try await exchange(
            "<iq type='get' id='\(id)' to='\(owner)'><pubsub xmlns='\(PEP.pubsub)'><items node='\(node)'\(attributes)>\(inside)</items></pubsub></iq>",
            id: id
        ).reply
    }

    /// An owner request (`pubsub#owner`) to the own account.
    func owner(_ type: String, _ inside: String) async throws -> (reply: XMLElement, before: [XMLElement]) {
        let id = "owner-\(UInt32.random(in: 0 ... .max))"
        return try await exchange("<iq type='\(type)' id='\(id)'><pubsub xmlns='\(PEP.owner)'>\(inside)</pubsub></iq>", id: id)
    }
}

extension XMLElement {
    /// The ids of the items of a `pubsub` items result, in order.
    var pubsubItemIDs: [String] {
        firstChild("pubsub", namespace: PEP.pubsub)?.firstChild("items", namespace: PEP.pubsub)?
            .children("item", namespace: PEP.pubsub).compactMap { $0[attribute: "id"] } ?? []
    }

    /// The `<items/>` (or `<delete/>`, `<purge/>`) of an event notification for `node`.
    func pepEvent(_ name: String = "items", node: String) -> XMLElement? {
        guard self.name == "message", type == "headline", let event = firstChild("event", namespace: PEP.event),
            let child = event.firstChild(name, namespace: PEP.event), child[attribute: "node"] == node
        else { return nil }
        return child
    }

    /// The pubsub application condition of an error reply.
    var pubsubErrorCondition: String? {
        firstChild("error")?.firstChild(inNamespace: PEP.errors)?.name
    }
}
