/// The SASL mechanisms Parley implements, by their IANA names.
public enum SASLMechanism: String, Sendable, Hashable, CaseIterable {
    case scramSHA256 = "SCRAM-SHA-256"
    case scramSHA1 = "SCRAM-SHA-1"
    case plain = "PLAIN"

    /// Strongest first: what a client picks when the server offers several.
    public static let clientPreference: [SASLMechanism] = [.scramSHA256, .scramSHA1, .plain]

    /// The hash of a SCRAM mechanism; nil for PLAIN.
    public var scramHash: HashFunction? {
        switch self {
        case .scramSHA256: .sha256
        case .scramSHA1: .sha1
        case .plain: nil
        }
    }

    /// The client's choice among the names a server offered. PLAIN sends the password itself,
    /// so a client allows it only on an encrypted stream (`allowPlain`). Names are compared
    /// exactly: RFC 4422 §3.1 mechanism names are upper case.
    public static func preferred(among offered: [String], allowPlain: Bool) -> SASLMechanism? {
        clientPreference.first { mechanism in
            (allowPlain || mechanism != .plain) && offered.contains(mechanism.rawValue)
        }
    }

    /// The `<mechanisms/>` stream feature offering `names` in the given order (the order is a
    /// hint of preference to the client).
    public static func featureElement(offering names: [String]) -> XMLElement {
        XMLElement(
            "mechanisms", namespace: XMLNamespace.sasl,
            children: names.map { .element(XMLElement("mechanism", namespace: XMLNamespace.sasl, text: $0)) })
    }

    public static func featureElement(offering mechanisms: [SASLMechanism]) -> XMLElement {
        featureElement(offering: mechanisms.map(\.rawValue))
    }

    /// The mechanism names a server offers, read from `<stream:features/>` or from the
    /// `<mechanisms/>` element itself; empty when SASL is not offered. Names a client does not
    /// know are kept (so they can be logged); `preferred(among:allowPlain:)` skips them.
    public static func offered(in element: XMLElement) -> [String] {
        let mechanisms: XMLElement? =
            element.name == "mechanisms" && element.namespace == XMLNamespace.sasl
            ? element : element.firstChild("mechanisms", namespace: XMLNamespace.sasl)
        guard let mechanisms else { return [] }
        return mechanisms.children("mechanism", namespace: XMLNamespace.sasl).compactMap { mechanism in
            let name = mechanism.text.trimmingASCIIWhitespace()
            return name.isEmpty ? nil : name
        }
    }
}

extension String {
    /// Feature lists from other servers are often pretty-printed: `<mechanism>\n PLAIN\n</mechanism>`
    /// is not valid but is seen, and costs nothing to accept.
    func trimmingASCIIWhitespace() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" || $0 == "\r\n" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}
