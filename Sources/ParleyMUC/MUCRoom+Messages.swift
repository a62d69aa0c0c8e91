import Foundation
import ParleyCore

/// Groupchat messages, the subject, and private messages between occupants (XEP-0045
/// §7.4, §7.5, §8.1).
extension MUCRoom {
    /// A groupchat message from `session` to the room: to every session of every occupant,
    /// from the sender's occupant JID, with the room's stanza-id (XEP-0359) and the sender's
    /// occupant id (XEP-0421). A subject without a body or a thread changes the subject.
    /// Returns the message as sent (without `to`), for the archive, and whom its copies (the
    /// last of `out`) went to.
    @discardableResult
    mutating func groupchat(_ stanza: XMLElement, from session: JID, out: inout [XMLElement]) throws(StanzaError) -> GroupchatSent {
        guard let nick = nick(of: session), let sender = occupant(nick) else {
            throw StanzaError(.notAcceptable, text: "Only occupants may send messages to the room; join it first.")
        }
        guard sender.role != .visitor else { throw StanzaError(.forbidden, text: "Visitors may not speak in this room.") }
        readyRecipients()
        // §8.1: with a body or a thread it is a message that has a subject, not a change.
        if let subject = stanza.firstChild("subject"), stanza.firstChild("body") == nil, stanza.firstChild("thread") == nil {
            guard sender.role == .moderator || configuration.occupantsMayChangeSubject else {
                throw StanzaError(.forbidden, text: "Only moderators may change the subject of this room.")
            }
            self.subject = (subject.text, occupantJID(nick))
        }
        let from = occupantJID(nick)
        var message = XMLElement("message", namespace: XMLNamespace.client, ["from": from.description, "type": "groupchat"])
        if let id = stanza.id { message.setAttribute("id", id) }
        for child in stanza.elements where !isRoomOwned(child) { message.append(child) }
        message.append(XMLElement("stanza-id", namespace: XMLNamespace.stanzaID, ["id": TimeOrderedUUID.make(), "by": jid.description]))
        message.append(XMLElement("occupant-id", namespace: MUCNamespace.occupantID, ["id": sender.occupantID]))
        if Self.isHistoric(message) { history.append(message, limit: historyLimit) }
        // The copies differ only in `to`: the rest is serialized once for all of them.
        let shared = XMLStanzaTemplate(message, context: .clientStream)
        let (sessions, to) = recipients.addressed(recipientsBySession)
        for attributes in to { out.append(shared.instance(attributes)) }
        return GroupchatSent(message: message, from: from, sessions: sessions)
    }

    /// A groupchat message as the room sent it.
    struct GroupchatSent {
        /// Without `to`: what the archive keeps.
        let message: XMLElement
        /// The sender's occupant JID, the copies' `from`.
        let from: JID
        /// Each copy's `to`, in the order the copies were queued.
        let sessions: [JID]
    }

    /// §7.5: a private message to one occupant (all its sessions), from the sender's
    /// occupant JID, marked with `<x xmlns='…muc#user'/>` so clients know where it came from.
    func privateMessage(_ stanza: XMLElement, from session: JID, to nick: String, out: inout [XMLElement]) throws(StanzaError) {
        guard let senderNick = self.nick(of: session), let sender = occupant(senderNick) else {
            throw StanzaError(.notAcceptable, text: "Only occupants may send private messages in this room; join it first.")
        }
        guard let target = occupant(nick) else {
            throw StanzaError(.itemNotFound, text: "No one in this room has the nickname '\(nick)'.")
        }
        let allowed = configuration.privateMessages
        guard target.account == sender.account || allowed.allows(sender.role) else {
            let text =
                switch allowed {
                case .anyone, .participants: "Only participants and moderators may send private messages in this room."
                case .moderators: "Only moderators may send private messages in this room."
                case .nobody: "Private messages are off in this room."
                }
            // cancel, as Prosody answers: retrying will not help until the configuration changes.
            throw StanzaError(.policyViolation, type: .cancel, text: text)
        }
        var message = XMLElement("message", namespace: XMLNamespace.client, ["from": occupantJID(senderNick).description])
        if let type = stanza.type { message.setAttribute("type", type) }
        if let id = stanza.id { message.setAttribute("id", id) }
        for child in stanza.elements where !isRoomOwned(child) { message.append(child) }
        message.append(XMLElement("x", namespace: MUCNamespace.user))
        message.append(XMLElement("occupant-id", namespace: MUCNamespace.occupantID, ["id": sender.occupantID]))
        for recipient in target.sessions {
            var copy = message
            copy.to = recipient.description
            out.append(copy)
        }
    }

    /// Elements only the room may write: its stanza-ids, occupant ids and MUC user data. A
    /// sender's copies would be forgeries.
    private func isRoomOwned(_ child: XMLElement) -> Bool {
        switch child.namespace {
        case MUCNamespace.occupantID, MUCNamespace.user: return true
        case XMLNamespace.stanzaID: return child.name == "stanza-id" && child[attribute: "by"] == jid.description
        default: return false
        }
    }
}
