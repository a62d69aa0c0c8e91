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

    /// Whether `session` wants notifications of `node`: a session on another node of a
    /// cluster says so in its directory entry, since only its own node learned it.
    func wants(_ session: SessionHandle, _ node: String) -> Bool {
        session.isRemote ? session.withPresence { $0.notifyNodes.contains(node) } : interests.wants(session.jid, node)
    }

    /// The available resources to notify about `node` of `owner`: the entitled sessions that
    /// want it, as kept by `recipientCache` (made again after any change), those available now.
    func recipients(owner: JID, node: String, configuration: PEPNodeConfiguration) async -> [SessionHandle] {
        if let known = recipientCache.sessions(owner: owner, node: node, configuration: configuration) {
            return known.filter(\.isAvailable)
        }
        let generation = recipientCache.generation
        var result = sessions.sessions(of: owner).filter { wants($0, node) }
        var complete = true
        if configuration.accessModel != .whitelist, let username = owner.localpart {
            if let contacts = await subscribedContacts(of: username) {
                for contact in contacts
                where PEPAccess.refusal(of: contact.jid, owner: owner, configuration: configuration, rosterItem: contact.item) == nil {
                    result += sessions.sessions(of: contact.jid).filter { wants($0, node) }
                }
            } else {
                complete = false
            }
        }
        if complete {
            recipientCache.keep(result, owner: owner, node: node, configuration: configuration, computedSince: generation)
        }
        return result.filter(\.isAvailable)
    }

    /// The owner's contacts on this server with a subscription to its presence (From or
    /// Both); nil if the roster could not be read.
    func subscribedContacts(of username: String) async -> [PEPRecipients.Contact]? {
        if let known = recipientCache.contacts(of: username) { return known }
        let generation = recipientCache.generation
        let items: [RosterItem]
        do {
            items = try await rosters.roster(of: username).items
        } catch {
            logger.error("cannot read roster", metadata: ["user": "\(username)", "error": "\(error)"])
            return nil
        }
        let contacts = items.compactMap { item -> PEPRecipients.Contact? in
            guard item.subscription == .from || item.subscription == .both, let jid = contactJIDs.jid(item.contact),
                jid.domainpart == domain.domainpart, jid.localpart != nil
            else { return nil }
            return PEPRecipients.Contact(jid: jid, item: item)
        }
        recipientCache.keep(contacts, of: username, readSince: generation)
        return contacts
    }

    /// The messages differ only in `to` and `id`: the rest is serialized once, and each
    /// recipient's is the template with those two (`XMLStanzaTemplate`). The ids are one
    /// random prefix per event and a counter (a fresh UUID per recipient cost a read of the
    /// random source and a Unicode lowercasing each). The hops to the recipients' event
    /// loops are batched.
    func send(_ event: XMLElement, from owner: JID, to recipients: [SessionHandle]) {
        guard !recipients.isEmpty else { return }
        let template = XMLStanzaTemplate(
            XMLElement("message", namespace: XMLNamespace.client, ["from": owner.description, "type": "headline"], [event]),
            context: .clientStream)
        let idPrefix = TimeOrderedUUID.make() + "-"
        let batch = DeliveryBatch()
        for (index, session) in recipients.enumerated() {
            let message = template.instance([XMLAttribute("to", session.jidString), XMLAttribute("id", idPrefix + String(index))])
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
        // A session interested in nothing (no caps +notify) costs no read of the owner's nodes:
        // every subscription approval comes here.
        guard let username = owner.localpart, !nodes.isEmpty else { return }
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
