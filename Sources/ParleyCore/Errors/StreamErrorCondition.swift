/// The defined stream error conditions of RFC 6120 §4.9.3.
public enum StreamErrorCondition: String, Sendable, CaseIterable {
    case badFormat = "bad-format"
    case badNamespacePrefix = "bad-namespace-prefix"
    case conflict
    case connectionTimeout = "connection-timeout"
    case hostGone = "host-gone"
    case hostUnknown = "host-unknown"
    case improperAddressing = "improper-addressing"
    case internalServerError = "internal-server-error"
    case invalidFrom = "invalid-from"
    case invalidNamespace = "invalid-namespace"
    case invalidXML = "invalid-xml"
    case notAuthorized = "not-authorized"
    case notWellFormed = "not-well-formed"
    case policyViolation = "policy-violation"
    case remoteConnectionFailed = "remote-connection-failed"
    case reset
    case resourceConstraint = "resource-constraint"
    case restrictedXML = "restricted-xml"
    case seeOtherHost = "see-other-host"
    case systemShutdown = "system-shutdown"
    case undefinedCondition = "undefined-condition"
    case unsupportedEncoding = "unsupported-encoding"
    case unsupportedFeature = "unsupported-feature"
    case unsupportedStanzaType = "unsupported-stanza-type"
    case unsupportedVersion = "unsupported-version"
}

/// A stream error: what one side sends in `<stream:error/>` before closing the stream, and
/// what the stream parser throws when the peer's bytes break the rules.
public struct StreamError: Error, Sendable, Hashable, CustomStringConvertible {
    public var condition: StreamErrorCondition
    /// Human-readable explanation, sent as `<text/>`. Says what happened, in one sentence.
    public var text: String?
    /// Only for `see-other-host`: the host (and port) to reconnect to.
    public var otherHost: String?

    public init(_ condition: StreamErrorCondition, text: String? = nil, otherHost: String? = nil) {
        self.condition = condition
        self.text = text
        self.otherHost = otherHost
    }

    public var description: String {
        text.map { "\(condition.rawValue): \($0)" } ?? condition.rawValue
    }

    /// `<stream:error><condition xmlns='…-streams'/><text …>…</text></stream:error>`.
    public var element: XMLElement {
        var error = XMLElement("error", namespace: XMLNamespace.streams)
        var conditionElement = XMLElement(condition.rawValue, namespace: XMLNamespace.streamErrors)
        if condition == .seeOtherHost, let otherHost { conditionElement.append(text: otherHost) }
        error.append(conditionElement)
        if let text {
            error.append(
                XMLElement(
                    "text", namespace: XMLNamespace.streamErrors,
                    attributes: [XMLAttribute("lang", "en", namespace: XMLNamespace.xml)],
                    children: [.text(text)]))
        }
        return error
    }

    /// Reads a received `<stream:error/>`; an unknown condition becomes `undefined-condition`
    /// as RFC 6120 §4.9.4 asks of a receiver.
    public init(element: XMLElement) {
        var condition = StreamErrorCondition.undefinedCondition
        var text: String? = nil
        var otherHost: String? = nil
        for child in element.elements where child.namespace == XMLNamespace.streamErrors {
            if child.name == "text" {
                text = child.text
            } else if let known = StreamErrorCondition(rawValue: child.name) {
                condition = known
                if known == .seeOtherHost { otherHost = child.text }
            }
        }
        self.init(condition, text: text, otherHost: otherHost)
    }
}
