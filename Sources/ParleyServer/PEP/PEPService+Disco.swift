import ParleyCore
import ParleyStorage

/// What an account's disco#info and disco#items show of its PEP service (XEP-0163 §6.1):
/// to the owner and to contacts with a presence subscription (as Prosody does), the
/// `pubsub/pep` identity and features, and the nodes each of them may read.
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
            })
    }

    private func seesService(_ requester: JID, of account: JID) async -> Bool {
        if requester.bare == account.bare { return true }
        guard let username = account.localpart else { return false }
        let contact = requester.bare.description
        let item = await rosterItems(of: username).first { $0.contact == contact }
        return item?.subscription == .from || item?.subscription == .both
    }
}
