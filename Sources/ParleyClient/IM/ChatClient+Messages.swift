import Foundation
import ParleyCore

/// One-to-one messages: sending with a receipt request (XEP-0184), a displayed-marker
/// request (XEP-0333) and an origin id (XEP-0359); receiving; answering receipt requests;
/// retracting (XEP-0424); and keeping all of it, with each message's delivery state, in the
/// cache.
extension ChatClient {
    /// Sends a chat message (queued while disconnected) and returns its id, which the
    /// `.sent`, `.delivered` and `.displayed` events name as it gets there.
    @discardableResult
    public func sendMessage(to recipient: JID, body: String) async -> String {
        let id = UUID().uuidString
        let record = MessageRecord(peer: recipient.bare, direction: .outgoing, id: id, originID: id, body: body, timestamp: Date())
        // Kept before it is sent: if this program ends before the server acknowledges it,
        // the next run sends it again (see `resendUnacknowledged`).
        await persist { _ = try await $0.store(record) }
        await send(Self.chatMessage(to: recipient, id: id, body: body))
        return id
    }

    static func chatMessage(to recipient: JID, id: String, body: String) -> XMLElement {
        var message = XMLElement("message", namespace: XMLNamespace.client, ["to": recipient.description, "type": "chat", "id": id])
        message.append(XMLElement("body", text: body))
        message.append(XMLElement("request", namespace: XMLNamespace.receipts))
        message.append(XMLElement("markable", namespace: XMLNamespace.chatMarkers))
        message.append(XMLElement("origin-id", namespace: XMLNamespace.stanzaID, ["id": id]))
        return message
    }

    /// Queues again what an earlier run wrote and no server acknowledged, with the same ids,
    /// so the server (by origin-id) and the recipient (by its cache) drop what did arrive.
    func resendUnacknowledged() async {
        let unsent = await persisted(or: []) { try await $0.unacknowledgedOutgoing() }
        for message in unsent {
            if let media = message.media {
                await send(Self.mediaMessage(to: message.peer, type: "chat", id: message.id, media: media))
            } else {
                await send(Self.chatMessage(to: message.peer, id: message.id, body: message.body))
            }
        }
        if !unsent.isEmpty { logger.info("sending again what the last run left unacknowledged", metadata: ["count": "\(unsent.count)"]) }
    }

    /// Takes back a message we sent (XEP-0424): the recipient's client and every archive copy
    /// show it as recalled. Clients that do not know retraction see the fallback text.
    public func retract(messageID: String, sentTo recipient: JID) async {
        var message = XMLElement("message", namespace: XMLNamespace.client, ["to": recipient.bare.description, "type": "chat", "id": UUID().uuidString])
        message.append(XMLElement("retract", namespace: XMLNamespace.messageRetract, ["id": messageID]))
        message.append(XMLElement("fallback", namespace: XMLNamespace.fallback, ["for": XMLNamespace.messageRetract]))
        message.append(XMLElement("body", text: "This person attempted to retract a previous message, but your client does not support it."))
        message.append(XMLElement("store", namespace: XMLNamespace.hints))
        let changed = await persisted(or: true) { try await $0.retract(id: messageID, peer: recipient, outgoing: true) }
        await send(message)
        if changed { await emit(.retracted(messageID: messageID, peer: recipient.bare, bySelf: true)) }
    }

    /// - Parameter answersReceipts: false for a carbon copy, which the device it was
    ///   addressed to answers.
    func handleMessage(_ stanza: XMLElement, answersReceipts: Bool = true) async {
        if collectRoomArchiveResult(stanza) || collectArchiveResult(stanza) { return }
        if await handleCarbon(stanza) { return }
        if await handlePubSubEvent(stanza) { return }
        if await handleRoomMessage(stanza) { return }
        guard let message = IncomingMessage(stanza, ownBareJID: ownBareJID) else { return }
        if message.type == "error" {
            let error = StanzaError(stanza: stanza) ?? StanzaError(.undefinedCondition)
            return await emit(.stanzaError(id: message.id, from: message.from, error: error))
        }
        if let receipt = message.receiptFor, !receipt.isEmpty {
            // Each of the recipient's devices may confirm the same message (and a read marker
            // may have come first): only a step forward is news. A message the cache never
            // saw (sent around it, with `xmpp.send`) has no state to compare with: reported.
            let news = await persisted(or: true) { cache in
                try await cache.advance(id: receipt, peer: message.from, to: .delivered) ? true : try await cache.message(id: receipt) == nil
            }
            if news {
                await emit(.delivered(messageID: receipt, by: message.from))
            }
        }
        if let displayed = message.displayedMarker {
            if await persisted(or: true, { try await $0.markReadUpTo(id: displayed, peer: message.from) }) { await emit(.displayed(messageID: displayed, by: message.from)) }
        }
        // Groupchat from rooms we are not in: not a one-to-one conversation.
        guard message.type != "groupchat" else { return }
        if let target = message.retracts {
            // Only the sender may take a message back: the lookup is among what `from` sent.
            if await persisted(or: true, { try await $0.retract(id: target, peer: message.from, outgoing: false) }) { await emit(.retracted(messageID: target, peer: message.from.bare, bySelf: false)) }
            return
        }
        if let body = message.body {
            let media = MediaAttachment(message: stanza)
            let record = MessageRecord(
                peer: message.from.bare, direction: .incoming, id: message.id, originID: message.originID,
                stanzaID: message.stanzaID, body: body, timestamp: message.delayedUntil ?? Date(), media: media)
            var isNew = true
            if let cache {
                do {
                    isNew = try await cache.store(record)
                } catch {
                    logger.error("cache write failed", metadata: ["error": "\(error)"])
                }
            }
            // The same message again (a resend after a lost connection): acknowledge it
            // below, but do not show it twice.
            if isNew {
                await emit(.message(ChatMessage(
                    id: message.id, from: message.from, to: stanza.to.flatMap { try? JID($0) }, body: body, type: message.type,
                    thread: message.thread, delayedUntil: message.delayedUntil, receiptRequested: message.receiptRequested,
                    media: media)))
            }
        }
        if answersReceipts, message.receiptRequested, let id = message.id, mayTellReadingState(to: message.from) {
            var receipt = XMLElement("message", namespace: XMLNamespace.client, ["to": message.from.description, "id": UUID().uuidString])
            receipt.append(XMLElement("received", namespace: XMLNamespace.receipts, ["id": id]))
            await send(receipt)
        }
    }

    /// The server has our messages: they move from pending to sent.
    func acknowledged(_ stanzas: [XMLElement]) async {
        for stanza in stanzas where stanza.name == "message" && stanza.firstChild("body") != nil {
            guard let id = stanza.id, let peer = stanza.to.flatMap({ try? JID($0) }),
                stanza.firstChild("retract", namespace: XMLNamespace.messageRetract) == nil
            else { continue }
            if await persisted(or: true, { try await $0.acknowledge(id: id, peer: peer) }) { await emit(.sent(messageID: id)) }
        }
    }

    /// XEP-0184 §8 and XEP-0333 §5: receipts and markers tell the sender we are online and
    /// reading, so they go only to those allowed to see our presence anyway, never to ourselves.
    func mayTellReadingState(to sender: JID) -> Bool {
        guard sender.bare != ownBareJID else { return false }
        let subscription = roster[sender.bare]?.subscription
        return subscription == .from || subscription == .both
    }

    // MARK: The cache, for the application

    /// Conversations, most recent first (empty without a cache).
    public func conversations() async throws -> [Conversation] {
        try await cache?.conversations() ?? []
    }

    /// The last `limit` messages with `peer`, oldest first, in the archive's order (empty
    /// without a cache).
    public func history(with peer: JID, limit: Int = 100) async throws -> [StoredMessage] {
        try await cache?.history(with: peer, limit: limit) ?? []
    }

    /// One of the cached messages, by its id (ours: the id `sendMessage` returned).
    public func storedMessage(id: String) async throws -> StoredMessage? {
        try await cache?.message(id: id)
    }

    /// The user has seen the conversation with `peer`: its unread count goes to zero and,
    /// when they may know, `peer` learns their last message was displayed (XEP-0333).
    public func markRead(_ peer: JID) async throws {
        guard let cache else { return }
        try await cache.markRead(peer)
        guard mayTellReadingState(to: peer), let last = try await cache.lastIncomingID(from: peer),
            displayedMarkersSent[peer.bare] != last
        else { return }
        displayedMarkersSent[peer.bare] = last
        var marker = XMLElement("message", namespace: XMLNamespace.client, ["to": peer.bare.description, "type": "chat", "id": UUID().uuidString])
        marker.append(XMLElement("displayed", namespace: XMLNamespace.chatMarkers, ["id": last]))
        marker.append(XMLElement("store", namespace: XMLNamespace.hints))
        await send(marker)
    }
}
