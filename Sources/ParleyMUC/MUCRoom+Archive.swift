import Foundation
import ParleyCore
import ParleyStorage

/// A room's archive (XEP-0313 on the room JID): which messages it keeps, who may read it,
/// and what a reader sees of each message.
extension MUCRoom {
    /// Whether a groupchat message belongs in the history and the archive, by Prosody's
    /// rules: never with a `<no-store/>` or `<no-permanent-store/>` hint (XEP-0334); with a
    /// `<store/>` hint, a body, or a chat marker. A bare subject change or a chat state is not
    /// kept.
    static func isHistoric(_ message: XMLElement) -> Bool {
        if message.firstChild("no-store", namespace: XMLNamespace.hints) != nil
            || message.firstChild("no-permanent-store", namespace: XMLNamespace.hints) != nil
        {
            return false
        }
        return message.firstChild("store", namespace: XMLNamespace.hints) != nil
            || message.firstChild("body") != nil
            || message.elements.contains { $0.namespace == XMLNamespace.chatMarkers && $0.name != "markable" }
    }

    /// The archive row for `message`, which the room just sent from the occupant JID of
    /// `session`; its text is made by the writer, off the service's lock.
    func archiveEntry(_ message: XMLElement, from session: JID, service: String, serverDomain: String) -> MUCArchiveWriter.Pending? {
        guard let nick = nick(of: session), let sender = occupant(nick),
            let stanzaID = message.firstChild("stanza-id", namespace: XMLNamespace.stanzaID)?[attribute: "id"]
        else { return nil }
        let local = sender.account.domainpart == serverDomain
        let entry = MUCArchiveEntry(
            service: service, room: jid.localpart ?? "", stanzaID: stanzaID, nick: nick,
            senderUsername: local ? sender.account.localpart : nil, senderJID: local ? nil : sender.account.description,
            stanza: "", archivedAt: Date())
        return MUCArchiveWriter.Pending(entry: entry, message: message)
    }

    /// Who may read the archive: whoever may enter (XEP-0313 §5.1.2 leaves it to the room).
    /// As in Prosody, an outcast never, a members-only room only its members. A password is
    /// something a query cannot carry: such a room's archive is for its occupants and those
    /// affiliated with it.
    func mayReadArchive(_ session: JID) throws(StanzaError) {
        let affiliation = affiliation(of: session)
        if affiliation == .outcast { throw StanzaError(.forbidden, text: "You are banned from this room.") }
        if nick(of: session) != nil || affiliation != .none { return }
        if configuration.membersOnly {
            throw StanzaError(.forbidden, text: "Only members may read the archive of this members-only room.")
        }
        if configuration.password != nil {
            throw StanzaError(.forbidden, text: "The archive of a password-protected room is for its occupants.")
        }
    }

    /// Whether `session` sees senders' real JIDs in archive results: in a non-anonymous room
    /// anyone does; otherwise moderators, and the admins and owners who are moderators
    /// whenever they are in the room.
    func mayReadRealJIDs(_ session: JID) -> Bool {
        if maySee(realJIDsAs: session) { return true }
        let affiliation = affiliation(of: session)
        return affiliation == .owner || affiliation == .admin
    }
}

/// Stored room messages as text, read back with the same parser as the network.
enum MUCStoredStanza {
    private static let header = "<stream:stream xmlns='jabber:client' xmlns:stream='\(XMLNamespace.streams)'>"

    /// Each text parsed, nil for one that cannot be read; one parser for all while they parse.
    static func parseAll(_ texts: [String]) -> [XMLElement?] {
        var parser: XMLStreamParser? = nil
        return texts.map { text in
            if parser == nil {
                let fresh = XMLStreamParser()
                guard (try? fresh.feed(Array(header.utf8))) != nil else { return nil }
                parser = fresh
            }
            var stanza: XMLElement? = nil
            if let events = try? parser?.feed(Array(text.utf8)) {
                for case .stanza(let element) in events { stanza = element }
            }
            // Nothing came out: the text was damaged and the parser may be mid-element.
            if stanza == nil { parser = nil }
            return stanza
        }
    }
}
