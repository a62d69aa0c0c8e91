import ParleyCore

/// XEP-0115 entity capabilities of the server itself: the `ver` of its disco#info, announced
/// as a stream feature after authentication (§6.3), so a client that has seen this `ver`
/// before need not ask again. Computed by the same §5 code that verifies clients' caps.
public struct ServerCapabilities: Sendable, Hashable {
    /// Names the software, not the deployment (§4: "the software that generated the caps").
    public static let node = "https://parley.im"

    public let ver: String

    /// - Parameter info: the disco#info `<query/>` the server answers for its domain.
    public init(info: XMLElement) {
        // The server's own answer has no duplicates, so §5.4 never rejects it.
        ver = EntityCapabilities.sha1Ver(of: info) ?? ""
    }

    public init(identities: [DiscoIdentity], features: [String], forms: [XMLElement]) {
        self.init(info: DiscoModule.Info(identities: identities, features: features, forms: forms).query(node: nil))
    }

    /// The `NODE#VER` a disco#info request names to ask for exactly this information.
    public var nodeVer: String { "\(Self.node)#\(ver)" }

    public var streamFeature: XMLElement {
        XMLElement("c", namespace: EntityCapabilities.namespace, ["hash": "sha-1", "node": Self.node, "ver": ver])
    }
}
