import Foundation
import ParleyCore

/// One-to-one messages: sending with a receipt request (XEP-0184) and an origin id (XEP-0359),
/// receiving, answering receipt requests, and keeping both in the cache.
extension ChatClient {
    /// Sends a chat message (queued while disconnected) and returns its id, which the
    /// `.delivered` event names once the recipient's client confirms it.
    @discardableResult
    public func sendMessage(to recipient: JID, body: String) async -> String {
        let id = UUID().uuidString
        var message = XMLElement("message", namespace: XMLNamespace.client, ["to": recipient.description, "type": "chat", "id": id])
        message.append(XMLElement("body", text: body))
        message.append(XMLElement("request", namespace: XMLNamespace.receipts))
        message.append(XMLElement("origin-id", namespace: XMLNamespace.stanzaID, ["id": id]))
        let record = MessageRecord(peer: recipient.bare, direction: .outgoing, id: id, originID: id, body: body, timestamp: Date())
        await persist { _ = try await $0.store(record) }
        await send(message)
        return id
    }

    func handleMessage(_ stanza: XMLElement) async {
        guard let message = IncomingMessage(stanza, ownBareJID: ownBareJID) else { return }
        if message.type == "error" {
            let error = StanzaError(stanza: stanza) ?? StanzaError(.undefinedCondition)
            return await emit(.stanzaError(id: message.id, from: message.from, error: error))
        }
        if let receipt = message.receiptFor, !receipt.isEmpty {
            await persist { try await $0.markDelivered(id: receipt, peer: message.from) }
            await emit(.delivered(messageID: receipt, by: message.from))
        }
        // Group chat is not supported; its messages are not one-to-one conversations.
        guard message.type != "groupchat" else { return }
        if let body = message.body {
            let record = MessageRecord(
                peer: message.from.bare, direction: .incoming, id: message.id, originID: message.originID,
                stanzaID: message.stanzaID, body: body, timestamp: message.delayedUntil ?? Date())
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
                    thread: message.thread, delayedUntil: message.delayedUntil, receiptRequested: message.receiptRequested)))
            }
        }
        if message.receiptRequested, let id = message.id, mayReturnReceipt(to: message.from) {
            var receipt = XMLElement("message", namespace: XMLNamespace.client, ["to": message.from.description, "id": UUID().uuidString])
            receipt.append(XMLElement("received", namespace: XMLNamespace.receipts, ["id": id]))
            await send(receipt)
        }
    }

    /// XEP-0184 §8: a receipt tells the sender we are online, so it goes only to those allowed
    /// to see our presence anyway, and never to ourselves.
    private func mayReturnReceipt(to sender: JID) -> Bool {
        guard sender.bare != ownBareJID else { return false }
        let subscription = roster[sender.bare]?.subscription
        return subscription == .from || subscription == .both
    }

    // MARK: The cache, for the application

    /// Conversations, most recent first (empty without a cache).
    public func conversations() async throws -> [Conversation] {
        try await cache?.conversations() ?? []
    }

    /// The last `limit` messages with `peer`, oldest first (empty without a cache).
    public func history(with peer: JID, limit: Int = 100) async throws -> [StoredMessage] {
        try await cache?.history(with: peer, limit: limit) ?? []
    }

    public func markRead(_ peer: JID) async throws {
        try await cache?.markRead(peer)
    }
}
