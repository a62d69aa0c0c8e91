import ParleyCore
import ParleyStorage

/// What an account's disco#info and disco#items show of its PEP service (XEP-0163 §6.1):
/// to the owner and to contacts with a presence subscription (as Prosody does), the
/// `pubsub/pep` identity and features, the nodes each of them may read, and each such
/// node's disco#info.
extension PEPService {
    var discoExtension: AccountDiscoExtension {
        AccountDiscoExtension(
            info: { [self] requester, account in
                guard await seesService(requester, of: account) else { return nil }
                return ([XMLElement("identity", ["category": "pubsub", "type": "pep"])], [PubSub.namespace] + PubSub.features)
            },
            items: { [self] requester, account in
                guard await seesService(requester, of: account), let username = account.localpart else { return nil }
                var items: [XMLElement] = []
                do {
                    for node in try await store.pepNodes(of: username)
                    where try await refusal(of: requester, owner: account, configuration: node.configuration) == nil {
                        var item = XMLElement("item", ["jid": account.bare.description, "node": node.name])
                        if let title = node.configuration.title { item.setAttribute("name", title) }
                        items.append(item)
                    }
                } catch {
                    logger.error("cannot list PEP nodes", metadata: ["owner": "\(account)", "error": "\(error)"])
                }
                return items
            },
            nodeInfo: { [self] requester, account, node in
                guard await seesService(requester, of: account), let username = account.localpart else { return .hidden }
                do {
                    guard let stored = try await store.pepNode(node, of: username),
                        try await refusal(of: requester, owner: account, configuration: stored.configuration) == nil
                    else { return .missing }
                    return .info(Self.nodeInfo(stored.configuration, owner: account))
                } catch {
                    logger.error("cannot read a PEP node", metadata: ["owner": "\(account)", "error": "\(error)"])
                    return .missing
                }
            })
    }

    /// XEP-0060 §5.3–5.4: a node is a leaf, with its metadata, as Prosody describes its PEP
    /// nodes (clients such as Smack ask before they fetch or publish).
    static func nodeInfo(_ configuration: PEPNodeConfiguration, owner: JID) -> [XMLElement] {
        var form = PEPDataForm.Builder(type: "result", formType: PubSub.namespace + "#meta-data")
        form.add("pubsub#owner", type: "jid-single", values: [owner.bare.description])
        form.add("pubsub#access_model", type: "list-single", values: [configuration.accessModel.rawValue])
        if let title = configuration.title { form.add("pubsub#title", type: "text-single", values: [title]) }
        if let description = configuration.nodeDescription { form.add("pubsub#description", type: "text-single", values: [description]) }
        if let type = configuration.payloadType { form.add("pubsub#type", type: "text-single", values: [type]) }
        return [
            XMLElement("identity", namespace: XMLNamespace.discoInfo, ["category": "pubsub", "type": "leaf"]),
            XMLElement("feature", namespace: XMLNamespace.discoInfo, ["var": PubSub.namespace]),
            form.element,
        ]
    }

    private func seesService(_ requester: JID, of account: JID) async -> Bool {
        if requester.bare == account.bare { return true }
        guard let username = account.localpart else { return false }
        let contact = requester.bare.description
        let item = await rosterItems(of: username).first { $0.contact == contact }
        return item?.subscription == .from || item?.subscription == .both
    }
}
