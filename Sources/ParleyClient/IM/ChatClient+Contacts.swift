import ParleyCore

/// Contacts: the roster (RFC 6121 §2, versioned per XEP-0237) and presence subscriptions as
/// friend requests (§3). "Friends" are contacts with a subscription in both directions:
/// accepting a request also asks back, and a request from someone we asked is accepted by
/// itself.
extension ChatClient {
    /// The roster as last received, sorted by JID.
    public func contacts() -> [Contact] {
        roster.values.sorted { $0.jid < $1.jid }
    }

    /// Fetches the roster: only what changed since the cached version when the server
    /// supports versioning (the changes then arrive as pushes), else all of it.
    public func refreshRoster() async throws {
        var query = XMLElement("query", namespace: XMLNamespace.roster)
        // §2.6.1: send 'ver' only to a server that advertised versioning; "" means "no cache".
        if await xmpp.streamFeatures?.firstChild("ver", namespace: XMLNamespace.rosterVersioning) != nil {
            query.setAttribute("ver", rosterVersion ?? "")
        }
        let result = try await xmpp.request(XMLElement("iq", namespace: XMLNamespace.client, ["type": "get"], [query]))
        if let full = result.firstChild("query", namespace: XMLNamespace.roster) {
            let contacts = full.children("item", namespace: XMLNamespace.roster).compactMap(Contact.init(rosterItem:))
            roster = Dictionary(contacts.map { ($0.jid, $0) }, uniquingKeysWith: { $1 })
            rosterVersion = full[attribute: "ver"]
            await persist { try await $0.replaceRoster(contacts, version: full[attribute: "ver"]) }
        }
        for contact in roster.values where contact.awaitingApproval { outgoingRequests.insert(contact.jid) }
        for contact in roster.values where contact.subscription == .from || contact.subscription == .both { answered(contact.jid) }
        await emit(.rosterChanged(contacts()))
    }

    /// A roster push (§2.1.6), which only our own server may send: no 'from', or our bare JID.
    func rosterPush(_ iq: XMLElement, _ query: XMLElement) async {
        if let from = iq.from, (try? JID(from)) != ownBareJID {
            logger.warning("ignored a roster push from \(from)")
            if let reply = iq.errorReply(StanzaError(.serviceUnavailable)) { await send(reply) }
            return
        }
        let items = query.children("item", namespace: XMLNamespace.roster)
        guard items.count == 1, let item = items.first, let address = item[attribute: "jid"], let jid = try? JID(address) else {
            if let reply = iq.errorReply(StanzaError(.badRequest, text: "A roster push carries one item.")) { await send(reply) }
            return
        }
        let version = query[attribute: "ver"]
        rosterVersion = version
        if item[attribute: "subscription"] == "remove" {
            roster[jid.bare] = nil
            outgoingRequests.remove(jid.bare)
            await persist { try await $0.applyRosterPush(upsert: nil, remove: jid.bare, version: version) }
        } else if let contact = Contact(rosterItem: item) {
            roster[contact.jid] = contact
            if contact.awaitingApproval { outgoingRequests.insert(contact.jid) }
            // Answered on another device.
            if contact.subscription == .from || contact.subscription == .both { answered(contact.jid) }
            await persist { try await $0.applyRosterPush(upsert: contact, remove: nil, version: version) }
        }
        await send(iq.iqResult())
        await emit(.rosterChanged(contacts()))
    }

    /// Adds `jid` to the roster and asks to see their presence, with an optional note that
    /// their client shows with the request (`<status/>`, RFC 6121 §3.1.1).
    public func addContact(_ jid: JID, name: String? = nil, message: String? = nil) async throws {
        let contact = jid.bare
        var item = XMLElement("item", ["jid": contact.description])
        if let name, !name.isEmpty { item.setAttribute("name", name) }
        var query = XMLElement("query", namespace: XMLNamespace.roster)
        query.append(item)
        _ = try await xmpp.request(XMLElement("iq", namespace: XMLNamespace.client, ["type": "set"], [query]))
        outgoingRequests.insert(contact)
        removalReported.remove(contact)
        await send(subscriptionPresence("subscribe", to: contact, message: message))
    }

    /// Friend requests that wait for an answer, by JID. The server repeats each at every
    /// available presence until it is answered, so a session that sent presence has them all.
    public func friendRequests() -> [FriendRequest] {
        friendRequestsByJID.values.sorted { $0.jid < $1.jid }
    }

    private func answered(_ contact: JID) {
        friendRequestsByJID[contact] = nil
    }

    /// Accepts a friend request: lets `jid` see our presence and, unless we already see
    /// theirs or asked to, asks to see theirs so that the friendship goes both ways.
    public func accept(_ jid: JID) async {
        let contact = jid.bare
        removalReported.remove(contact)
        answered(contact)
        await send(subscriptionPresence("subscribed", to: contact))
        let item = roster[contact]
        let alreadyAsked = outgoingRequests.contains(contact) || item?.awaitingApproval == true
        if item?.subscription != .to, item?.subscription != .both, !alreadyAsked {
            outgoingRequests.insert(contact)
            await send(subscriptionPresence("subscribe", to: contact))
        }
    }

    /// Declines a friend request (or stops `jid` seeing our presence).
    public func decline(_ jid: JID) async {
        answered(jid.bare)
        await send(subscriptionPresence("unsubscribed", to: jid.bare))
    }

    /// Removes `jid` from the roster; the server ends the subscriptions both ways (§2.5.2).
    public func removeContact(_ jid: JID) async throws {
        var query = XMLElement("query", namespace: XMLNamespace.roster)
        query.append(XMLElement("item", ["jid": jid.bare.description, "subscription": "remove"]))
        _ = try await xmpp.request(XMLElement("iq", namespace: XMLNamespace.client, ["type": "set"], [query]))
        outgoingRequests.remove(jid.bare)
    }

    private func subscriptionPresence(_ type: String, to contact: JID, message: String? = nil) -> XMLElement {
        var presence = XMLElement("presence", namespace: XMLNamespace.client, ["to": contact.description, "type": type])
        if let message, !message.isEmpty { presence.append(XMLElement("status", text: message)) }
        // XEP-0172 §4.2: a request says who asks, before the other side can read our PEP.
        if type == "subscribe", let nickname = profiles[ownBareJID]?.nickname {
            presence.append(XMLElement("nick", namespace: ProfileNamespace.nick, text: nickname))
        }
        return presence
    }

    func handlePresence(_ stanza: XMLElement) async {
        if await handleRoomPresence(stanza) { return }
        guard let address = stanza.from, let from = try? JID(address) else { return }
        let peer = from.bare
        switch stanza.type {
        case "subscribe":
            let item = roster[peer]
            if outgoingRequests.contains(peer) || item?.subscription == .to || item?.awaitingApproval == true {
                // They ask back someone we asked (or already see): the friendship completes.
                return await send(subscriptionPresence("subscribed", to: peer))
            }
            removalReported.remove(peer)
            let nickname = stanza.firstChild("nick", namespace: ProfileNamespace.nick).flatMap { Self.cleanNickname($0.text) }
            let request = FriendRequest(jid: peer, message: stanza.firstChild("status")?.text, nickname: nickname)
            if let nickname, profiles[peer]?.nickname == nil { await updateProfile(of: peer) { $0.nickname = nickname } }
            friendRequestsByJID[peer] = request
            await emit(.contactRequest(from: peer, message: request.message))
        case "subscribed":
            outgoingRequests.remove(peer)
            removalReported.remove(peer)
            await emit(.contactAccepted(peer))
        case "unsubscribed":
            if outgoingRequests.remove(peer) != nil {
                await emit(.contactDeclined(peer))
            } else if removalReported.insert(peer).inserted {
                await emit(.contactRemoved(peer))
            }
        case "unsubscribe":
            // Also how a request is withdrawn.
            answered(peer)
            if removalReported.insert(peer).inserted { await emit(.contactRemoved(peer)) }
        case "error":
            await emit(.stanzaError(id: stanza.id, from: from, error: StanzaError(stanza: stanza) ?? StanzaError(.undefinedCondition)))
        default:
            guard let update = PresenceUpdate(stanza) else { return }
            trackResource(stanza, update)
            // Our own presence comes back with what we put in it: nothing to learn.
            if update.show != .unavailable, peer != ownBareJID { vcardUpdateInPresence(stanza, from: peer) }
            await emit(.presence(update))
        }
    }

    /// Writes to the cache, if there is one; a failed write is logged, not fatal: the
    /// server remains the source of truth.
    func persist(_ write: @Sendable (ChatCache) async throws -> Void) async {
        guard let cache else { return }
        do {
            try await write(cache)
        } catch {
            logger.error("cache write failed", metadata: ["error": "\(error)"])
        }
    }

    /// Like `persist`, for a write that answers something; `fallback` without a cache or
    /// when the write fails.
    func persisted<Answer: Sendable>(or fallback: Answer, _ write: @Sendable (ChatCache) async throws -> Answer) async -> Answer {
        guard let cache else { return fallback }
        do {
            return try await write(cache)
        } catch {
            logger.error("cache write failed", metadata: ["error": "\(error)"])
            return fallback
        }
    }
}
