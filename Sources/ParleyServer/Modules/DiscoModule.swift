import NIOConcurrencyHelpers
import ParleyCore

/// XEP-0030 service discovery. The feature lists are not written by hand: they are what the
/// other modules registered, handed over once the registry is complete.
public final class DiscoModule: ServerModule {
    public static let infoNamespace = XMLNamespace.discoInfo
    public static let itemsNamespace = XMLNamespace.discoItems

    private let serverName: String
    private let info = NIOLockedValueBox([IQTarget: Info]())
    private let capabilities = NIOLockedValueBox(ServerCapabilities(identities: [], features: [], forms: []))
    private let accountExtension = NIOLockedValueBox<AccountDiscoExtension?>(nil)
    /// The server's disco#items: its hosted services (XEP-0030 §4).
    private let serverItems = NIOLockedValueBox<[XMLElement]>([])

    /// What disco#info says about one target, fixed once every module has registered.
    struct Info: Sendable {
        var identities: [DiscoIdentity] = []
        var features: [String] = []
        var forms: [XMLElement] = []

        func query(node: String?) -> XMLElement {
            var query = XMLElement("query", namespace: DiscoModule.infoNamespace)
            if let node { query[attribute: "node"] = node }
            for identity in identities { query.append(identity.element) }
            for feature in features { query.append(XMLElement("feature", ["var": feature])) }
            for form in forms { query.append(form) }
            return query
        }
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
        let server = info.withLockedValue {
            for target in [IQTarget.server, .account] {
                $0[target] = Info(
                    identities: [own[target]!] + (registry.identities[target] ?? []),
                    features: registry.advertisedFeatures(for: target), forms: registry.infoForms[target] ?? [])
            }
            return $0[.server]!
        }
        capabilities.withLockedValue { $0 = ServerCapabilities(info: server.query(node: nil)) }
    }

    /// The items the server's own disco#items lists (its hosted services).
    public func listServerItems(_ items: [XMLElement]) {
        serverItems.withLockedValue { $0 = items }
    }

    /// Lets another module (PEP) add to what accounts show, to requesters it chooses.
    public func extendAccounts(with accountExtension: AccountDiscoExtension) {
        self.accountExtension.withLockedValue { $0 = accountExtension }
    }

    /// The server's XEP-0115 capabilities, computed from exactly what disco#info answers.
    public var serverCapabilities: ServerCapabilities {
        capabilities.withLockedValue { $0 }
    }

    private func answerInfo(_ request: IQRequest, target: IQTarget, _ responder: IQResponder) {
        let node = request.payload[attribute: "node"]
        let accountExtension = accountExtension.withLockedValue { $0 }
        // XEP-0115 §6.2: the node#ver the server announced names its own information.
        if let node, !(target == .server && node == serverCapabilities.nodeVer) {
            let missing = StanzaError(.itemNotFound, text: "This entity has no disco node '\(node)'.")
            guard target == .account else { return responder.error(missing) }
            guard let accountExtension else {
                return responder.error(request.isToOwnAccount ? missing : StanzaError(.serviceUnavailable))
            }
            Task {
                switch await accountExtension.nodeInfo(request.from, request.to, node) {
                // XEP-0030 §8: to whoever may not see the account, a node of it is no
                // different from an account that does not exist.
                case .hidden: responder.error(StanzaError(.serviceUnavailable))
                case .missing: responder.error(missing)
                case .info(let children): responder.result(XMLElement("query", namespace: Self.infoNamespace, ["node": node], children))
                }
            }
            return
        }
        if target == .account, let accountExtension {
            return answerExtendedInfo(request, accountExtension, responder)
        }
        // An account's features are its owner's business; to anyone else the account looks
        // like any address the server will not answer for (no existence leak).
        if target == .account, !request.isToOwnAccount {
            return responder.error(StanzaError(.serviceUnavailable))
        }
        responder.result(info.withLockedValue { $0[target] ?? Info() }.query(node: node))
    }

    /// XEP-0030 §8: an account's items go to those who may see them; anyone else gets an
    /// empty list, the same whether the account exists or not.
    private func answerItems(_ request: IQRequest, _ responder: IQResponder) {
        var query = XMLElement("query", namespace: Self.itemsNamespace)
        let node = request.payload[attribute: "node"]
        if let node { query.setAttribute("node", node) }
        if !request.to.isDomain, node == nil, let accountExtension = accountExtension.withLockedValue({ $0 }) {
            let empty = query
            Task {
                var answer = empty
                for item in await accountExtension.items(request.from, request.to) ?? [] { answer.append(item) }
                responder.result(answer)
            }
            return
        }
        if node == nil, request.to.isDomain {
            for item in serverItems.withLockedValue({ $0 }) { query.append(item) }
        }
        responder.result(query)
    }
}

extension DiscoModule {
    /// An account's disco#info with what the extension adds: the owner sees everything,
    /// someone the extension admits sees the account and the extension's part only.
    private func answerExtendedInfo(_ request: IQRequest, _ accountExtension: AccountDiscoExtension, _ responder: IQResponder) {
        let account = info.withLockedValue { $0[.account] ?? Info() }
        Task {
            let extra = await accountExtension.info(request.from, request.to)
            guard request.isToOwnAccount || extra != nil else { return responder.error(StanzaError(.serviceUnavailable)) }
            var query = XMLElement("query", namespace: Self.infoNamespace)
            let identities = request.isToOwnAccount ? account.identities : Array(account.identities.prefix(1))
            for identity in identities { query.append(identity.element) }
            for identity in extra?.identities ?? [] { query.append(identity) }
            let ownFeatures = request.isToOwnAccount ? account.features : []
            for feature in Set(ownFeatures + (extra?.features ?? [])).sorted() {
                query.append(XMLElement("feature", ["var": feature]))
            }
            if request.isToOwnAccount { for form in account.forms { query.append(form) } }
            responder.result(query)
        }
    }
}

/// What a module adds to an account's disco#info and disco#items; nil from either means
/// "nothing for this requester" (who then sees what the account shows without it).
public struct AccountDiscoExtension: Sendable {
    /// The answer about one node of an account (XEP-0030 §3.2).
    public enum NodeInfo: Sendable {
        /// The requester may not see the account's nodes at all: as if it did not exist.
        case hidden
        /// No such node, or none the requester may see.
        case missing
        /// The query's children: identities, features, forms.
        case info([XMLElement])
    }

    public var info: @Sendable (_ requester: JID, _ account: JID) async -> (identities: [XMLElement], features: [String])?
    public var items: @Sendable (_ requester: JID, _ account: JID) async -> [XMLElement]?
    public var nodeInfo: @Sendable (_ requester: JID, _ account: JID, _ node: String) async -> NodeInfo

    public init(
        info: @escaping @Sendable (_ requester: JID, _ account: JID) async -> (identities: [XMLElement], features: [String])?,
        items: @escaping @Sendable (_ requester: JID, _ account: JID) async -> [XMLElement]?,
        nodeInfo: @escaping @Sendable (_ requester: JID, _ account: JID, _ node: String) async -> NodeInfo
    ) {
        self.info = info
        self.items = items
        self.nodeInfo = nodeInfo
    }
}
