/// The stanza error conditions of RFC 6120 §8.3.3, each with the error type the RFC gives it.
public enum StanzaErrorCondition: String, Sendable, CaseIterable {
    case badRequest = "bad-request"
    case conflict
    case featureNotImplemented = "feature-not-implemented"
    case forbidden
    case gone
    case internalServerError = "internal-server-error"
    case itemNotFound = "item-not-found"
    case jidMalformed = "jid-malformed"
    case notAcceptable = "not-acceptable"
    case notAllowed = "not-allowed"
    case notAuthorized = "not-authorized"
    case policyViolation = "policy-violation"
    case recipientUnavailable = "recipient-unavailable"
    case redirect
    case registrationRequired = "registration-required"
    case remoteServerNotFound = "remote-server-not-found"
    case remoteServerTimeout = "remote-server-timeout"
    case resourceConstraint = "resource-constraint"
    case serviceUnavailable = "service-unavailable"
    case subscriptionRequired = "subscription-required"
    case undefinedCondition = "undefined-condition"
    case unexpectedRequest = "unexpected-request"

    public var defaultType: StanzaErrorType {
        switch self {
        case .badRequest, .jidMalformed, .notAcceptable, .policyViolation, .redirect: .modify
        case .forbidden, .notAuthorized, .registrationRequired, .subscriptionRequired: .auth
        case .recipientUnavailable, .remoteServerTimeout, .resourceConstraint, .unexpectedRequest: .wait
        default: .cancel
        }
    }
}

public enum StanzaErrorType: String, Sendable {
    case auth, cancel, `continue`, modify, wait
}

/// A stanza error (RFC 6120 §8.3): thrown by handlers and turned into the error reply.
public struct StanzaError: Error, Sendable, Hashable, CustomStringConvertible {
    public var condition: StanzaErrorCondition
    public var type: StanzaErrorType
    public var text: String?
    /// The JID of the entity that generated the error, when it is not the server itself.
    public var by: String?
    /// An application-specific condition element, such as XEP-0191's `<blocked/>`.
    public var applicationCondition: XMLElement?

    public init(
        _ condition: StanzaErrorCondition, type: StanzaErrorType? = nil, text: String? = nil,
        by: String? = nil, applicationCondition: XMLElement? = nil
    ) {
        self.condition = condition
        self.type = type ?? condition.defaultType
        self.text = text
        self.by = by
        self.applicationCondition = applicationCondition
    }

    public var description: String {
        text.map { "\(condition.rawValue): \($0)" } ?? condition.rawValue
    }

    /// `<error type='…'><condition xmlns='…-stanzas'/><text/>…</error>` in the stanza's namespace.
    public var element: XMLElement {
        var error = XMLElement("error", attributes: [XMLAttribute("type", type.rawValue)])
        if let by { error.setAttribute("by", by) }
        error.append(XMLElement(condition.rawValue, namespace: XMLNamespace.stanzaErrors))
        if let text {
            error.append(
                XMLElement(
                    "text", namespace: XMLNamespace.stanzaErrors,
                    attributes: [XMLAttribute("lang", "en", namespace: XMLNamespace.xml)],
                    children: [.text(text)]))
        }
        if let applicationCondition { error.append(applicationCondition) }
        return error
    }

    /// Reads the `<error/>` child of an error stanza; unknown conditions read as
    /// `undefined-condition`, a missing or unknown type as the condition's default.
    public init?(stanza: XMLElement) {
        guard let error = stanza.firstChild("error") else { return nil }
        var condition = StanzaErrorCondition.undefinedCondition
        var text: String? = nil
        var application: XMLElement? = nil
        for child in error.elements {
            if child.namespace == XMLNamespace.stanzaErrors {
                if child.name == "text" {
                    text = child.text
                } else if let known = StanzaErrorCondition(rawValue: child.name) {
                    condition = known
                }
            } else {
                application = child
            }
        }
        self.init(
            condition, type: error[attribute: "type"].flatMap(StanzaErrorType.init(rawValue:)),
            text: text, by: error[attribute: "by"], applicationCondition: application)
    }
}

extension XMLElement {
    /// The error reply to this stanza (RFC 6120 §8.3.1): addresses swapped, same id, the
    /// original payload dropped, `type='error'`. `nil` for a stanza that is itself an error,
    /// which must never be answered with another.
    public func errorReply(_ error: StanzaError) -> XMLElement? {
        guard type != "error" else { return nil }
        var reply = XMLElement(name, namespace: namespace)
        if let from { reply.setAttribute("to", from) }
        if let to { reply.setAttribute("from", to) }
        if let id { reply.setAttribute("id", id) }
        reply.setAttribute("type", "error")
        if let lang = attribute("lang", namespace: XMLNamespace.xml) {
            reply.setAttribute("lang", lang, namespace: XMLNamespace.xml)
        }
        reply.append(error.element)
        return reply
    }

    /// An empty `type='result'` answer to this iq, addresses swapped.
    public func iqResult(_ payload: XMLElement? = nil) -> XMLElement {
        var reply = XMLElement("iq", namespace: namespace)
        if let from { reply.setAttribute("to", from) }
        if let to { reply.setAttribute("from", to) }
        if let id { reply.setAttribute("id", id) }
        reply.setAttribute("type", "result")
        if let payload { reply.append(payload) }
        return reply
    }
}
