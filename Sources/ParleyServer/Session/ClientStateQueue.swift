import Foundation
import ParleyCore

/// XEP-0352 client state indication: what an inactive client (a phone in a pocket) is not
/// woken for. Stanzas that can wait are held here, in order, until something it must see
/// now arrives, the client turns active or sends anything, or the queue is full; then all
/// of them go out, oldest first, ahead of whatever caused the flush.
///
/// Held stanzas are not yet sent: XEP-0198 does not count them, and when the session ends
/// they are handed on like unacknowledged ones (messages to another resource or offline
/// storage), never dropped.
struct ClientStateQueue: Sendable {
    static let namespace = "urn:xmpp:csi:0"
    static let chatStates = "http://jabber.org/protocol/chatstates"
    static let eme = "urn:xmpp:eme:0"
    static let conference = "jabber:x:conference"
    static let mucUser = "http://jabber.org/protocol/muc#user"
    static let jingleMessage = "urn:xmpp:jingle-message:0"

    /// What is held, while anything is: most sessions are active, or inactive with nothing
    /// waiting, and then carry one pointer, not two collections and a count (16 bytes more
    /// in every session's state).
    private final class Held: @unchecked Sendable {
        var stanzas: [XMLElement?] = []
        /// Where each contact's (full JID's) latest held presence is in `stanzas`: a newer
        /// one replaces it, since only the latest says anything.
        var presenceIndex: [String: Int] = [:]
        var count = 0

        func copy() -> Held {
            let copy = Held()
            copy.stanzas = stanzas
            copy.presenceIndex = presenceIndex
            copy.count = count
            return copy
        }
    }

    private var held: Held?

    var count: Int { held?.count ?? 0 }
    var isEmpty: Bool { count == 0 }

    /// Holds `stanza`; a presence replaces the held one from the same full JID (which
    /// leaves its place, so the newest sits in arrival order). With `stampedBy` (the user's
    /// bare JID), the stanza gets an XEP-0203 delay saying when it arrived, as Prosody adds
    /// one: the client learns when a contact went away, not when it looked.
    mutating func hold(_ stanza: XMLElement, stampedBy user: String? = nil, at date: Date = Date()) {
        var stanza = stanza
        if let user, stanza.name != "iq",
            !stanza.children("delay", namespace: XMLNamespace.delay).contains(where: { $0[attribute: "from"] == user })
        {
            stanza.append(XMLElement("delay", namespace: XMLNamespace.delay, ["from": user, "stamp": OfflineModule.timestamp(date)]))
        }
        if held == nil {
            held = Held()
        } else if !isKnownUniquelyReferenced(&held!) {
            held = held!.copy()  // a copy of the queue changes on its own
        }
        let held = self.held!
        if stanza.name == "presence", let from = stanza.from {
            if let previous = held.presenceIndex[from] {
                held.stanzas[previous] = nil
                held.count -= 1
            }
            held.presenceIndex[from] = held.stanzas.count
        }
        held.stanzas.append(stanza)
        held.count += 1
    }

    /// Everything held, oldest first; the queue is empty afterwards.
    mutating func drain() -> [XMLElement] {
        guard let held else { return [] }
        self.held = nil
        return held.stanzas.compactMap { $0 }
    }

    /// Whether an inactive client must get `stanza` now, the way Prosody's mod_csi_simple
    /// decides: iq (someone waits for the answer), subscription requests and answers, errors
    /// of any kind, and messages a person would want to see (a body, a subject, encrypted
    /// content, an invitation, a call, a copy of what the user sent elsewhere); not presence
    /// updates, headlines, chat states, receipts and markers. A received carbon is judged by
    /// the message it carries.
    static func isImportant(_ stanza: XMLElement) -> Bool {
        // An error answers something the client did: it is waiting for it.
        if stanza.type == "error" { return true }
        switch stanza.name {
        case "presence":
            // Subscription requests and answers are; updates (available, unavailable) are not.
            return stanza.type != nil && stanza.type != "unavailable"
        case "message":
            if stanza.type == "headline" { return false }
            // A sent carbon means the user is typing on another device right now: this one
            // had better be current when they pick it up.
            if stanza.firstChild("sent", namespace: XMLNamespace.carbons) != nil { return true }
            var message = stanza
            if let inner = stanza.firstChild("received", namespace: XMLNamespace.carbons)?
                .firstChild("forwarded", namespace: XMLNamespace.forward)?.firstChild("message")
            {
                message = inner
            }
            return message.firstChild("body") != nil || message.firstChild("subject") != nil
                || message.firstChild("encryption", namespace: eme) != nil
                || message.firstChild("x", namespace: conference) != nil
                || message.firstChild("x", namespace: mucUser)?.firstChild("invite") != nil
                || message.firstChild("propose", namespace: jingleMessage) != nil
        default:
            return true
        }
    }
}
