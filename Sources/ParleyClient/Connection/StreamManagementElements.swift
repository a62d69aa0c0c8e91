import NIOConcurrencyHelpers
import ParleyCore

/// The XEP-0198 (`urn:xmpp:sm:3`) elements the client sends and reads.
enum StreamManagementElements {
    static let namespace = XMLNamespace.streamManagement

    static func enable() -> XMLElement {
        XMLElement("enable", namespace: namespace, ["resume": "true"])
    }

    static func resume(previd: String, h: UInt32) -> XMLElement {
        XMLElement("resume", namespace: namespace, ["previd": previd, "h": String(h)])
    }

    static var request: XMLElement { XMLElement("r", namespace: namespace) }

    static func answer(_ h: UInt32) -> XMLElement {
        XMLElement("a", namespace: namespace, ["h": String(h)])
    }

    /// `h` is an xs:unsignedInt; anything else is a broken server.
    static func counter(_ element: XMLElement) -> UInt32? {
        element[attribute: "h"].flatMap { UInt32($0) }
    }

    static func isOffered(in features: XMLElement?) -> Bool {
        features?.firstChild("sm", namespace: namespace) != nil
    }
}

/// How many stanzas the client has handled in one managed session (the `h` it reports).
/// The connection's event loop counts; the client reads it to resume on a new connection,
/// so it outlives the connection that counted.
final class HandledCounter: Sendable {
    private let value = NIOLockedValueBox<UInt32>(0)

    var count: UInt32 { value.withLockedValue { $0 } }

    /// One more stanza handled; the count wraps at 2^32 (XEP-0198 §4).
    func increment() {
        value.withLockedValue { $0 &+= 1 }
    }
}

/// What a new connection needs to take over a managed session instead of binding a new one.
struct ResumptionRequest: Sendable {
    var previd: String
    /// The session's full JID, which a resumed session keeps.
    var jid: JID
    var counter: HandledCounter
}

/// How a connection's session came to be, as the client needs to know it.
enum SessionStart: Sendable {
    /// A new session; `management` is nil when the server does not do XEP-0198 (or refused).
    case bound(management: ManagedSession?, failedResumption: FailedResumption?)
    /// The previous session was taken over: the server had handled `h` of our stanzas.
    case resumed(h: UInt32, counter: HandledCounter)

    struct ManagedSession: Sendable {
        /// nil when the server enabled acknowledgements without resumption.
        var resumptionID: String?
        var counter: HandledCounter
    }

    /// A resumption was tried and refused; `h` is how far the old session got, if the
    /// server said.
    struct FailedResumption: Sendable {
        var h: UInt32?
    }
}
