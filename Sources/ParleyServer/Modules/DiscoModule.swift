import NIOConcurrencyHelpers
import ParleyCore

/// XEP-0030 service discovery. The feature lists are not written by hand: they are what the
/// other modules registered, handed over once the registry is complete.
public final class DiscoModule: ServerModule {
    public static let infoNamespace = XMLNamespace.discoInfo
    public static let itemsNamespace = XMLNamespace.discoItems

    private let serverName: String
    private let features = NIOLockedValueBox([IQTarget: [String]]())

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
        features.withLockedValue {
            $0[.server] = registry.advertisedFeatures(for: .server)
            $0[.account] = registry.advertisedFeatures(for: .account)
        }
    }

    private func answerInfo(_ request: IQRequest, target: IQTarget, _ responder: IQResponder) {
        if request.payload[attribute: "node"] != nil {
            return responder.error(StanzaError(.itemNotFound, text: "This entity has no disco nodes."))
        }
        // An account's features are its owner's business; to anyone else the account looks
        // like any address the server will not answer for (no existence leak).
        if target == .account, !request.isToOwnAccount {
            return responder.error(StanzaError(.serviceUnavailable))
        }
        var query = XMLElement("query", namespace: Self.infoNamespace)
        if target == .server {
            query.append(XMLElement("identity", ["category": "server", "type": "im", "name": serverName]))
        } else {
            query.append(XMLElement("identity", ["category": "account", "type": "registered"]))
        }
        for feature in features.withLockedValue({ $0[target] ?? [] }) {
            query.append(XMLElement("feature", ["var": feature]))
        }
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
