/// The SASL negotiation elements of RFC 6120 §6.4 (namespace `urn:ietf:params:xml:ns:xmpp-sasl`),
/// with their base64 payloads decoded. Building and parsing live together so the two cannot
/// disagree about the zero-length rules:
/// - `<auth/>` with no text has no initial response; `=` is a present but empty one (§6.4.2);
/// - `<success/>` likewise for its additional data (§6.3.10);
/// - `<challenge/>` and `<response/>` always carry data; empty text means zero bytes, and `=` is
///   accepted as the same thing.
public enum SASLElement: Sendable, Hashable {
    case auth(mechanism: String, initialResponse: [UInt8]?)
    case challenge([UInt8])
    case response([UInt8])
    case success(additionalData: [UInt8]?)
    case failure(SASLFailure)
    case abort

    public var element: XMLElement {
        switch self {
        case .auth(let mechanism, let initialResponse):
            return Self.make("auth", attributes: [XMLAttribute("mechanism", mechanism)], payload: initialResponse)
        case .challenge(let data):
            return Self.make("challenge", payload: data.isEmpty ? nil : data)
        case .response(let data):
            return Self.make("response", payload: data.isEmpty ? nil : data)
        case .success(let additionalData):
            return Self.make("success", payload: additionalData)
        case .failure(let failure):
            return failure.element
        case .abort:
            return XMLElement("abort", namespace: XMLNamespace.sasl)
        }
    }

    /// Reads a received element. Throws `incorrect-encoding` for bad base64 (as §6.4.2 asks),
    /// `invalid-mechanism` for an `<auth/>` without a mechanism, and `malformed-request` for
    /// anything that is not a SASL element.
    public init(parsing element: XMLElement) throws(SASLFailure) {
        guard element.namespace == XMLNamespace.sasl else {
            throw .malformedRequest("not in the SASL namespace")
        }
        switch element.name {
        case "auth":
            guard let mechanism = element[attribute: "mechanism"], !mechanism.isEmpty else {
                throw SASLFailure(.invalidMechanism, text: "no mechanism given")
            }
            self = .auth(mechanism: mechanism, initialResponse: try Self.payload(of: element))
        case "challenge":
            self = .challenge(try Self.payload(of: element) ?? [])
        case "response":
            self = .response(try Self.payload(of: element) ?? [])
        case "success":
            self = .success(additionalData: try Self.payload(of: element))
        case "failure":
            self = .failure(SASLFailure(element: element))
        case "abort":
            self = .abort
        default:
            throw .malformedRequest("unknown SASL element <\(element.name)/>")
        }
    }

    private static func make(_ name: String, attributes: [XMLAttribute] = [], payload: [UInt8]?) -> XMLElement {
        let text = payload.map { $0.isEmpty ? "=" : Base64.encode($0) }
        return XMLElement(
            name, namespace: XMLNamespace.sasl, attributes: attributes, children: text.map { [.text($0)] } ?? [])
    }

    /// nil for no text at all, `[]` for `=`, else the strictly decoded bytes.
    private static func payload(of element: XMLElement) throws(SASLFailure) -> [UInt8]? {
        let text = element.text
        if text.isEmpty { return nil }
        if text == "=" { return [] }
        do throws(Base64.DecodingError) {
            return try Base64.decode(text)
        } catch {
            throw .incorrectEncoding("invalid base64 in <\(element.name)/>")
        }
    }
}

extension SASLFailure {
    /// `<failure xmlns='…-sasl'><condition/><text xml:lang='en'>…</text></failure>`.
    public var element: XMLElement {
        var failure = XMLElement("failure", namespace: XMLNamespace.sasl)
        failure.append(XMLElement(condition.rawValue, namespace: XMLNamespace.sasl))
        if let text {
            failure.append(
                XMLElement(
                    "text", namespace: XMLNamespace.sasl,
                    attributes: [XMLAttribute("lang", "en", namespace: XMLNamespace.xml)], children: [.text(text)]))
        }
        return failure
    }

    /// Reads a received `<failure/>`. RFC 6120 defines no catch-all SASL condition, so a
    /// missing or unknown one reads as `not-authorized`: either way authentication failed.
    public init(element: XMLElement) {
        var condition = Condition.notAuthorized
        var text: String?
        for child in element.elements where child.namespace == XMLNamespace.sasl {
            if child.name == "text" {
                text = child.text
            } else if let known = Condition(rawValue: child.name) {
                condition = known
            }
        }
        self.init(condition, text: text)
    }
}
