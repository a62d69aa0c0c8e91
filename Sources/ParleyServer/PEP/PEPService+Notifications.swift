import ParleyCore
import ParleyStorage

/// Event notifications (XEP-0060 §7.1.2, XEP-0163 §4.3): a headline message from the owner's
/// bare JID to each available resource that is entitled to the node (the owner's own, and
/// contacts with a presence subscription whom the access model lets in) and asked for it
/// with `+notify`; and the last published item, sent when such a resource appears or a
/// contact gains its subscription.
extension PEPService {
    static func event(_ child: XMLElement) -> XMLElement {
        XMLElement("event", namespace: PubSub.event, [:], [child])
    }

    static func itemsEvent(_ node: String, _ child: XMLElement) -> XMLElement {
        event(XMLElement("items", ["node": node], [child]))
    }

    func notify(owner: JID, node: String, configuration: PEPNodeConfiguration, event: XMLElement) async {
        send(event, from: owner, to: await recipients(owner: owner, node: node, configuration: configuration))
    }

    /// The available resources to notify about `node` of `owner`.
    func recipients(owner: JID, node: String, configuration: PEPNodeConfiguration) async -> [SessionHandle] {
        var result = sessions.sessions(of: owner).filter { $0.isAvailable && interests.wants($0.jid, node) }
        guard configuration.accessModel != .whitelist, let username = owner.localpart else { return result }
        for item in await rosterItems(of: username) where item.subscription == .from || item.subscription == .both {
            guard let contact = contactJIDs.jid(item.contact), contact.domainpart == domain.domainpart, contact.localpart != nil,
                PEPAccess.refusal(of: contact, owner: owner, configuration: configuration, rosterItem: item) == nil
            else { continue }
            result += sessions.sessions(of: contact).filter { $0.isAvailable && interests.wants($0.jid, node) }
        }
        return result
    }

    /// The messages differ only in `to` and `id`: one is built, and each recipient's is a copy
    /// with those two set, sharing the event, which is serialized once for all of them. The
    /// ids are one random prefix per event and a counter (a fresh UUID per recipient cost a
    /// read of the random source and a Unicode lowercasing each). The hops to the
    /// recipients' event loops are batched.
    func send(_ event: XMLElement, from owner: JID, to recipients: [SessionHandle]) {
        guard !recipients.isEmpty else { return }
        let shared = recipients.count > 1 ? event.serializedOnce(in: .clientStream) : event
        let template = XMLElement(
            "message", namespace: XMLNamespace.client, ["from": owner.description, "to": "", "type": "headline", "id": ""], [shared])
        let idPrefix = Self.newItemID() + "-"
        let batch = DeliveryBatch()
        for (index, session) in recipients.enumerated() {
            var message = template
            message.to = session.jidString
            message.id = idPrefix + String(index)
            guard policy.verdict(from: owner, to: session.jid, stanza: message) == .deliver else { continue }
            session.deliver(message, in: batch)
        }
        batch.submit()
    }

    // MARK: Last published item (XEP-0163 §4.3.4, XEP-0060 §12.3)

    /// `session` now wants notifications for `nodes`: the last item of each such node of
    /// the user's own service and of every contact it is subscribed to.
    func sendLastItems(to session: SessionHandle, nodes: Set<String>) async {
        guard !nodes.isEmpty else { return }
        var owners = [session.jid.bare]
        do {
            for (user, subscription) in try await rosters.rosterOwners(naming: session.jid.bare.description)
            where subscription == .from || subscription == .both {
                if let owner = try? JID(localpart: user, domainpart: domain.domainpart), owner != session.jid.bare { owners.append(owner) }
            }
        } catch {
            logger.error("cannot read who the user is subscribed to", metadata: ["jid": "\(session.jid)", "error": "\(error)"])
        }
        for owner in owners { await sendLastItems(of: owner, to: session, nodes: nodes) }
    }

    func sendLastItems(of owner: JID, to session: SessionHandle, nodes: Set<String>) async {
        guard let username = owner.localpart else { return }
        do {
            let candidates = try await store.pepNodes(of: username).filter {
                nodes.contains($0.name) && $0.configuration.sendLastPublishedItem == .onSubAndPresence
                    && $0.configuration.persistItems && $0.configuration.deliverNotifications
            }
            guard !candidates.isEmpty else { return }
            // One roster read for all of the owner's nodes (the access models need the item).
            let contact = session.jid.bare.description
            let rosterItem = owner == session.jid.bare ? nil : await rosterItems(of: username).first { $0.contact == contact }
            for node in candidates {
                guard PEPAccess.refusal(of: session.jid.bare, owner: owner, configuration: node.configuration, rosterItem: rosterItem) == nil,
                    let last = try await store.pepItems(node: node.name, of: username, ids: nil, newest: 1).last
                else { continue }
                var item = XMLElement("item", ["id": last.id])
                if node.configuration.deliverPayloads, let payload = StoredStanza.parse(last.payload) { item.append(payload) }
                send(Self.itemsEvent(node.name, item), from: owner, to: [session])
            }
        } catch {
            logger.error("cannot send the last published items", metadata: ["owner": "\(owner)", "error": "\(error)"])
        }
    }

    /// RFC 6121 §3.1.5 for PEP: a new subscriber's resources get the owner's last items.
    func subscriptionApproved(owner: JID, subscriber: JID) async {
        for session in sessions.sessions(of: subscriber) where session.isAvailable {
            await sendLastItems(of: owner, to: session, nodes: interests.nodes(of: session.jid))
        }
    }

    func rosterItems(of username: String) async -> [RosterItem] {
        do {
            return try await rosters.roster(of: username).items
        } catch {
            logger.error("cannot read roster", metadata: ["user": "\(username)", "error": "\(error)"])
            return []
        }
    }
}
