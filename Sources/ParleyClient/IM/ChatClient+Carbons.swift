import Foundation
import ParleyCore

/// XEP-0280 message carbons: what our other devices send and receive shows up here live, so
/// every device keeps the same conversation without waiting for the next archive catch-up.
extension ChatClient {
    /// Asks the server for carbons on this session; a server without them answers an error,
    /// and the archive catch-up still brings the other devices' messages later.
    func enableCarbons() async {
        do {
            _ = try await xmpp.request(
                XMLElement("iq", namespace: XMLNamespace.client, ["type": "set"], [XMLElement("enable", namespace: XMLNamespace.carbons)]))
        } catch {
            logger.debug("carbons not enabled", metadata: ["error": "\(error)"])
        }
    }

    /// A carbon copy handled; false if `stanza` is not one. Only our own account may send
    /// them (XEP-0280 §11): anyone else's are dropped.
    func handleCarbon(_ stanza: XMLElement) async -> Bool {
        let wrapper = stanza.firstChild("received", namespace: XMLNamespace.carbons) ?? stanza.firstChild("sent", namespace: XMLNamespace.carbons)
        guard let wrapper else { return false }
        guard stanza.from == ownBareJID.description,
            let copy = wrapper.firstChild("forwarded", namespace: XMLNamespace.forward)?.firstChild("message", namespace: XMLNamespace.client)
        else { return true }
        if wrapper.name == "received" {
            // Another device got it and answers receipts itself.
            await handleMessage(copy, answersReceipts: false)
        } else {
            await sentByAnotherDevice(copy)
        }
        return true
    }

    private func sentByAnotherDevice(_ copy: XMLElement) async {
        guard let recipient = copy.to.flatMap({ try? JID($0) }), recipient.bare != ownBareJID else { return }
        let peer = recipient.bare
        if let target = copy.firstChild("retract", namespace: XMLNamespace.messageRetract)?[attribute: "id"] {
            if await persisted(or: true, { try await $0.retract(id: target, peer: peer, outgoing: true) }) {
                await emit(.retracted(messageID: target, peer: peer, bySelf: true))
            }
            return
        }
        if copy.firstChild("displayed", namespace: XMLNamespace.chatMarkers) != nil {
            // Read on another device: read here too.
            await persist { try await $0.markRead(peer) }
        }
        guard let body = copy.firstChild("body")?.text, copy.type != "groupchat", copy.type != "error" else { return }
        let originID = copy.firstChild("origin-id", namespace: XMLNamespace.stanzaID)?[attribute: "id"]
        let stanzaID = copy.children("stanza-id", namespace: XMLNamespace.stanzaID).first { $0[attribute: "by"] == ownBareJID.description }?[attribute: "id"]
        let media = MediaAttachment(message: copy)
        let record = MessageRecord(
            peer: peer, direction: .outgoing, id: copy.id, originID: originID, stanzaID: stanzaID, body: body, timestamp: Date(), media: media)
        if await persisted(or: true, { try await $0.storeSentElsewhere(record) }) {
            let from = copy.from.flatMap { try? JID($0) } ?? ownBareJID
            await emit(.message(ChatMessage(id: copy.id, from: from, to: recipient, body: body, type: copy.type ?? "normal", thread: copy.firstChild("thread")?.text,
                media: media)))
        }
    }
}
