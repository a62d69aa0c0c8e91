import NIOCore
import ParleyCore
import ParleyStream

/// One client request: the `<body/>` wrapper's attributes (XEP-0124 §7, XEP-0206 §5) and the
/// stanzas it carries.
struct BOSHRequest: Sendable {
    static let namespace = "http://jabber.org/protocol/httpbind"
    static let xmppNamespace = "urn:xmpp:xbosh"
    /// XEP-0124 §7.1: a rid stays below 2^53 so that every client language holds it exactly.
    static let maxRID: UInt64 = (1 << 53) - 1

    let body: XMLElement
    let rid: UInt64
    /// Nil on a session creation request.
    let sid: String?
    let payload: [XMLElement]

    var isTerminate: Bool { body[attribute: "type"] == "terminate" }
    var isRestart: Bool { body.attribute("restart", namespace: Self.xmppNamespace) == "true" }
    /// Seconds the client pauses for (§10), when it asks to.
    var pause: Int? { body[attribute: "pause"].flatMap { Int($0) } }
    /// The highest rid the client has its answers for (§9).
    var ack: UInt64? { body[attribute: "ack"].flatMap { UInt64($0) } }
    var to: String? { body[attribute: "to"] }
    var language: String? { body.attribute("lang", namespace: XMLNamespace.xml) }
    var isEmpty: Bool { payload.isEmpty }

    /// Parses a request body; every failure is the client's (`bad-request`).
    static func parse(_ bytes: ByteBuffer, maxDepth: Int) throws(BOSHError) -> BOSHRequest {
        let body = try element(of: bytes, maxDepth: maxDepth)
        guard body.name == "body", body.namespace == namespace else {
            throw BOSHError(.badRequest, "the request is not a <body xmlns='\(namespace)'/>")
        }
        guard let ridText = body[attribute: "rid"], let rid = UInt64(ridText), rid > 0, rid <= maxRID else {
            throw BOSHError(.badRequest, "the body has no valid rid")
        }
        if let pause = body[attribute: "pause"], Int(pause).map({ $0 > 0 }) != true {
            throw BOSHError(.badRequest, "pause must be a positive number of seconds")
        }
        let sid = body[attribute: "sid"]
        return BOSHRequest(body: body, rid: rid, sid: sid, payload: body.elements.map(Self.clientNamespace))
    }

    /// The `<body/>` as one element, parsed as a stanza of a `jabber:client` stream would be,
    /// so that the same restrictions apply (no DTD, entities, comments or PIs; depth).
    private static func element(of bytes: ByteBuffer, maxDepth: Int) throws(BOSHError) -> XMLElement {
        var bytes = bytes
        bytes.skipXMLPrologue()
        guard bytes.readableBytes > 0 else { throw BOSHError(.badRequest, "the request has no body") }
        let parser = XMLStreamParser(limits: .init(maxStanzaBytes: bytes.readableBytes + 1, maxDepth: maxDepth + 1))
        var events: [XMLStreamEvent] = []
        do {
            _ = try parser.feed(Array("<stream:stream xmlns='\(XMLNamespace.client)' xmlns:stream='\(XMLNamespace.streams)'>".utf8))
            try bytes.withUnsafeReadableBytes { raw throws(StreamError) in
                _ = try parser.feed(raw) { event in
                    events.append(event)
                    return .continue
                }
            }
        } catch let error as StreamError {
            throw BOSHError(.badRequest, "the body is not well-formed XML (\(error.text ?? error.condition.rawValue))")
        } catch {
            throw BOSHError(.badRequest, "the body could not be read (\(error))")
        }
        guard events.count == 1, case .stanza(let element) = events[0], parser.isBetweenStanzas else {
            throw BOSHError(.badRequest, "the request must be exactly one <body/> element")
        }
        return element
    }

    /// Stanzas written without their own `xmlns` inherit the wrapper's; they are `jabber:client`
    /// ones (XEP-0206 §6, and what Prosody does).
    static func clientNamespace(_ element: XMLElement) -> XMLElement {
        guard element.namespace == namespace || element.elements.contains(where: { $0.namespace == namespace }) else {
            return element
        }
        let children = element.children.map { node -> XMLNode in
            if case .element(let child) = node { return .element(clientNamespace(child)) }
            return node
        }
        let renamed = element.namespace == namespace ? XMLNamespace.client : element.namespace
        return XMLElement(element.name, namespace: renamed, attributes: element.attributes, children: children)
    }

}

/// A terminal binding condition (XEP-0124 §17.2): the session, if any, is over.
struct BOSHError: Error, Sendable {
    enum Condition: String, Sendable {
        case badRequest = "bad-request"
        case hostUnknown = "host-unknown"
        case improperAddressing = "improper-addressing"
        case internalServerError = "internal-server-error"
        case itemNotFound = "item-not-found"
        case policyViolation = "policy-violation"
        case remoteConnectionFailed = "remote-connection-failed"
        case remoteStreamError = "remote-stream-error"
        case seeOtherURI = "see-other-uri"
        case systemShutdown = "system-shutdown"

        /// §17.1: what a client that did not say `ver` expects instead (HTTP error codes).
        var legacyStatus: Int {
            switch self {
            case .badRequest: 400
            case .policyViolation: 403
            case .itemNotFound: 404
            default: 200
            }
        }
    }

    let condition: Condition
    /// For the log only: the body has no room for text.
    let reason: String

    init(_ condition: Condition, _ reason: String) {
        self.condition = condition
        self.reason = reason
    }
}
