import ParleyCore

/// XEP-0115 entity capabilities: the verification string of a disco#info result (§5.1,
/// with the extended forms of XEP-0128) and its checks (§5.4). A `ver` whose hash matches
/// what the client answered can be cached for every client that announces it.
public enum EntityCapabilities {
    public static let namespace = "http://jabber.org/protocol/caps"

    /// What a presence's `<c/>` announces.
    struct Announcement: Sendable, Hashable {
        var hash: String?
        var node: String
        var ver: String

        init?(presence: XMLElement) {
            guard let c = presence.firstChild("c", namespace: EntityCapabilities.namespace),
                let node = c[attribute: "node"], let ver = c[attribute: "ver"], !ver.isEmpty
            else { return nil }
            self.hash = c[attribute: "hash"]
            self.node = node
            self.ver = ver
        }

        /// Only a hashed `ver` names a feature set that can be shared between clients; legacy
        /// caps (no `hash`) and hashes this server does not compute are asked per client.
        var isVerifiable: Bool { hash == "sha-1" }
    }

    /// The features a disco#info `<query/>` lists.
    static func features(of query: XMLElement) -> Set<String> {
        Set(query.children("feature", namespace: XMLNamespace.discoInfo).compactMap { $0[attribute: "var"] })
    }

    /// The base64 SHA-1 of the §5.1 string, or nil when §5.4 says the result cannot be
    /// trusted (duplicate identities or features, two forms of one FORM_TYPE, a malformed form).
    static func sha1Ver(of query: XMLElement) -> String? {
        CapabilitiesHash.sha1Ver(of: query)
    }

    static func verificationString(of query: XMLElement) -> String? {
        CapabilitiesHash.verificationString(of: query)
    }
}
