import NIOConcurrencyHelpers
import ParleyCore

/// XEP-0030 service discovery. The feature lists are not written by hand: they are what the
/// other modules registered, handed over once the registry is complete.
public final class DiscoModule: ServerModule {
    public static let infoNamespace = XMLNamespace.discoInfo
    public static let itemsNamespace = XMLNamespace.discoItems

    private let serverName: String
    private let info = NIOLockedValueBox([IQTarget: Info]())

    /// What disco#info says about one target, fixed once every module has registered.
    struct Info: Sendable {
        var identities: [DiscoIdentity] = []
        var features: [String] = []
        var forms: [XMLElement] = []
    }

    public init(serverName: String = "Parley") {
        self.serverName = serverName
    }

    public func register(in registry: inout ModuleRegistry) throws(ModuleRegistry.Error) {
        for target in [IQTarget.server, .account] {
            try registry.handle(.get, "query", namespace: Self.infoNamespace, for: target) { [self] request, responder in
                answerInfo(request, target: target, responder)
            }
            try registry.handle(.get, "query", namespace: Self.itemsNamespace, for: target) { [self] request, responder in
                answerItems(request, responder)
            }
        }
    }

    /// Called once every module has registered.
    public func publish(from registry: ModuleRegistry) {
        let own: [IQTarget: DiscoIdentity] = [
            .server: DiscoIdentity(category: "server", type: "im", name: serverName),
            .account: DiscoIdentity(category: "account", type: "registered"),
        ]
        info.withLockedValue {
            for target in [IQTarget.server, .account] {
                $0[target] = Info(
                    identities: [own[target]!] + (registry.identities[target] ?? []),
                    features: registry.advertisedFeatures(for: target), forms: registry.infoForms[target] ?? [])
            }
        }
    }

    /// The server's XEP-0115 capabilities, computed from exactly what disco#info answers.
    public var serverCapabilities: EntityCapabilities {
        let server = info.withLockedValue { $0[.server] ?? Info() }
        return EntityCapabilities(identities: server.identities, features: server.features, forms: server.forms)
    }

    private func answerInfo(_ request: IQRequest, target: IQTarget, _ responder: IQResponder) {
        let node = request.payload[attribute: "node"]
        // XEP-0115 §6.2: the node#ver the server announced names its own information.
        if let node, !(target == .server && node == serverCapabilities.nodeVer) {
            return responder.error(StanzaError(.itemNotFound, text: "This entity has no disco node '\(node)'."))
        }
        // An account's features are its owner's business; to anyone else the account looks
        // like any address the server will not answer for (no existence leak).
        if target == .account, !request.isToOwnAccount {
            return responder.error(StanzaError(.serviceUnavailable))
        }
        var query = XMLElement("query", namespace: Self.infoNamespace)
        if let node { query[attribute: "node"] = node }
        let info = info.withLockedValue { $0[target] ?? Info() }
        for identity in info.identities { query.append(identity.element) }
        for feature in info.features { query.append(XMLElement("feature", ["var": feature])) }
        for form in info.forms { query.append(form) }
        responder.result(query)
    }

    private func answerItems(_ request: IQRequest, _ responder: IQResponder) {
        if request.to.isDomain == false, !request.isToOwnAccount {
            return responder.error(StanzaError(.serviceUnavailable))
        }
        var query = XMLElement("query", namespace: Self.itemsNamespace)
        if let node = request.payload[attribute: "node"] { query.setAttribute("node", node) }
        responder.result(query)
    }
}
