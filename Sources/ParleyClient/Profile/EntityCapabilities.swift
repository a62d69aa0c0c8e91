import ParleyCore

/// XEP-0115 Entity Capabilities: the `ver` hash over a disco#info answer (§5.1), and what this
/// client says about itself. Servers with PEP (XEP-0163 §4) read the `+notify` features of a
/// contact's caps to decide whom to send avatar and nickname updates, so the hash must match
/// the disco#info answer exactly or those notifications never come.
public enum EntityCapabilities {
    public struct Identity: Sendable, Equatable {
        public var category: String
        public var type: String
        public var lang: String?
        public var name: String?

        public init(category: String, type: String, lang: String? = nil, name: String? = nil) {
            self.category = category
            self.type = type
            self.lang = lang
            self.name = name
        }
    }

    /// The string §5.1 hashes: identities, features, then extended forms (XEP-0128), each
    /// sorted in octet order and ended by '<'.
    public static func verificationString(identities: [Identity], features: [String], forms: [XMLElement] = []) -> String {
        var text = ""
        let sorted = identities.sorted { a, b in
            if a.category != b.category { return octetOrder(a.category, b.category) }
            if a.type != b.type { return octetOrder(a.type, b.type) }
            return octetOrder(a.lang ?? "", b.lang ?? "")
        }
        for identity in sorted {
            text += "\(identity.category)/\(identity.type)/\(identity.lang ?? "")/\(identity.name ?? "")<"
        }
        for feature in features.sorted(by: octetOrder) { text += feature + "<" }
        func formType(_ form: XMLElement) -> String {
            form.children("field").first { $0[attribute: "var"] == "FORM_TYPE" }?.firstChild("value")?.text ?? ""
        }
        for form in forms.sorted(by: { octetOrder(formType($0), formType($1)) }) {
            text += formType(form) + "<"
            let fields = form.children("field").filter { $0[attribute: "var"] != "FORM_TYPE" }
            for field in fields.sorted(by: { octetOrder($0[attribute: "var"] ?? "", $1[attribute: "var"] ?? "") }) {
                text += (field[attribute: "var"] ?? "") + "<"
                for value in field.children("value").map(\.text).sorted(by: octetOrder) { text += value + "<" }
            }
        }
        return text
    }

    /// Base64 of the SHA-1 of the verification string (the `hash='sha-1'` every client reads).
    public static func ver(identities: [Identity], features: [String], forms: [XMLElement] = []) -> String {
        let text = verificationString(identities: identities, features: features, forms: forms)
        return Base64.encode((try? HashFunction.sha1.digest(Array(text.utf8))) ?? [])
    }

    /// XEP-0115 §5.1 compares "in byte order", not by Unicode collation.
    static func octetOrder(_ a: String, _ b: String) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8)
    }

    // MARK: This client

    /// Names the software in caps (`node`); the URI need not resolve.
    public static let node = "https://parley.chat/client"
    public static let softwareName = "Parley"
    public static let softwareVersion = "0.1.0"

    static let identity = Identity(category: "client", type: "pc", name: softwareName)

    /// What this client supports. The `+notify` features ask PEP services for contacts'
    /// avatars (XEP-0084 §4.2) and nicknames (XEP-0172 §4.4).
    static let features: [String] = [
        XMLNamespace.discoInfo, XMLNamespace.receipts, XMLNamespace.ping, XMLNamespace.stanzaID, XMLNamespace.chatMarkers,
        XMLNamespace.messageRetract, XMLNamespace.carbons, XMLNamespace.version, ProfileNamespace.caps,
        ProfileNamespace.notify(ProfileNamespace.avatarMetadata), ProfileNamespace.notify(ProfileNamespace.nick),
    ]

    static let ownVer = ver(identities: [identity], features: features)

    /// The disco#info answer (XEP-0030), for a query without a node or with our `node#ver`.
    static func discoInfo(node: String?) -> XMLElement {
        var query = XMLElement("query", namespace: XMLNamespace.discoInfo)
        if let node { query.setAttribute("node", node) }
        query.append(XMLElement("identity", ["category": identity.category, "type": identity.type, "name": softwareName]))
        for feature in features { query.append(XMLElement("feature", ["var": feature])) }
        return query
    }

    /// The `<c/>` for our presence (§4).
    static var presenceElement: XMLElement {
        XMLElement("c", namespace: ProfileNamespace.caps, ["hash": "sha-1", "node": node, "ver": ownVer])
    }
}
