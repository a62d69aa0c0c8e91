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
    /// sorted in octet order and ended by '<' (ParleyCore's `CapabilitiesHash`, which the
    /// server uses too).
    public static func verificationString(identities: [Identity], features: [String], forms: [XMLElement] = []) -> String {
        CapabilitiesHash.verificationString(of: query(identities: identities, features: features, forms: forms)) ?? ""
    }

    /// Base64 of the SHA-1 of the verification string (the `hash='sha-1'` every client reads).
    public static func ver(identities: [Identity], features: [String], forms: [XMLElement] = []) -> String {
        CapabilitiesHash.sha1Ver(of: query(identities: identities, features: features, forms: forms)) ?? ""
    }

    /// The disco#info `<query/>` these stand for.
    static func query(identities: [Identity], features: [String], forms: [XMLElement], node: String? = nil) -> XMLElement {
        var query = XMLElement("query", namespace: XMLNamespace.discoInfo)
        if let node { query.setAttribute("node", node) }
        for identity in identities {
            var element = XMLElement("identity", ["category": identity.category, "type": identity.type])
            if let lang = identity.lang { element.setAttribute("lang", lang, namespace: XMLNamespace.xml) }
            if let name = identity.name { element[attribute: "name"] = name }
            query.append(element)
        }
        for feature in features { query.append(XMLElement("feature", ["var": feature])) }
        for form in forms { query.append(form) }
        return query
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

    static let ownVer = CapabilitiesHash.sha1Ver(of: discoInfo(node: nil)) ?? ""

    /// The disco#info answer (XEP-0030), for a query without a node or with our `node#ver`:
    /// the very element `ownVer` hashes.
    static func discoInfo(node: String?) -> XMLElement {
        query(identities: [identity], features: features, forms: [], node: node)
    }

    /// The `<c/>` for our presence (§4).
    static var presenceElement: XMLElement {
        XMLElement("c", namespace: ProfileNamespace.caps, ["hash": "sha-1", "node": node, "ver": ownVer])
    }
}
