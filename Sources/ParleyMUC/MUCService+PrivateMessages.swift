import ParleyCore
import ParleyServer

/// Private messages between occupants (XEP-0045 §7.5) as part of the accounts'
/// conversations: the server archives them on the local accounts' side and carbons what a
/// device sent to the account's other devices under the same nickname; the room says which
/// those are, and gives the recipient's copies the stanza-id of its archive.
extension MUCService: PrivateMessageService {
    public func privateMessageRoute(from session: JID, to address: JID) -> PrivateMessageRoute? {
        guard let key = address.localpart, let nick = address.resourcepart else { return nil }
        return withLockedState { state -> PrivateMessageRoute? in
            guard let room = state.rooms[key], room.occupant(nick) != nil, let own = room.nick(of: session),
                let sender = room.occupant(own)
            else { return nil }
            return PrivateMessageRoute(participants: sender.sessions.array, marker: XMLElement("x", namespace: MUCNamespace.user))
        }
    }

    /// Sends the private message from `session` to `nick` in room `key`: one copy to each
    /// session of the recipient, each with the stanza-id of the recipient's archive when the
    /// recipient is a local account whose server keeps it.
    func privateMessage(_ stanza: XMLElement, from session: JID, room key: String, to nick: String, state: State, out: inout [XMLElement])
        throws(StanzaError)
    {
        guard let room = state.rooms[key] else { return }
        var copies: [XMLElement] = []
        try room.privateMessage(stanza, from: session, to: nick, out: &copies)
        guard var message = copies.first, let recipient = room.occupant(nick), let outlet = outlet.withLockedValue({ $0 }),
            let from = message.from.flatMap({ try? JID($0) })
        else { return out.append(contentsOf: copies) }
        message = outlet.archivePrivateMessage(message, from: from, to: recipient.account)
        for copy in copies {
            message.to = copy.to
            out.append(message)
        }
    }
}
