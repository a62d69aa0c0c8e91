import ParleyCore

/// The account's side of private messages through a hosted service (`PrivateMessageService`):
/// they go into the local accounts' archives, and the sender's fellow participants get
/// carbons, but no other device does (XEP-0280 §6: a device that is not in the room can
/// neither place nor answer the message). What the room sends a recipient is not copied
/// either: the room itself gives it to every session under the nickname.
extension StanzaRouter {
    /// Archives and copies `stanza`, which `sender` sends to `to` at `service`, if it is a
    /// private message there; the service then receives the message as the client sent it.
    /// Returns the archive rows to wait for before acknowledging it (XEP-0198).
    func recordOutgoingPrivateMessage(_ stanza: XMLElement, to: JID, from sender: SessionHandle, service: any HostedService)
        -> ClosedRange<UInt64>?
    {
        let type = stanza.type ?? "normal"
        guard stanza.name == "message", to.isFull, type == "chat" || type == "normal",
            let service = service as? any PrivateMessageService,
            let route = service.privateMessageRoute(from: sender.jid, to: to)
        else { return nil }
        var tagged = stanza
        if let marker = route.marker, stanza.firstChild(marker.name, namespace: marker.namespace) == nil {
            tagged.append(marker)
        }
        let routed = modules.messageArchiver?(tagged, sender.jid, to) ?? RoutedMessage(forRecipient: tagged, forSender: tagged)
        // The copier leaves out the sessions it is told already have the message: here,
        // every session of the account that is not a fellow participant.
        let outsiders = sessions.sessions(of: sender.jid.bare).filter { !route.participants.contains($0.jid) }
        modules.messageCopier?(routed, sender, to, outsiders)
        return routed.archived
    }

    /// See `HostedServiceOutlet.archivePrivateMessage`.
    func archiveHostedPrivateMessage(_ message: XMLElement, from sender: JID, to account: JID) -> XMLElement {
        let type = message.type ?? "normal"
        guard type == "chat" || type == "normal", account.domainpart == domain.domainpart, account.localpart != nil,
            let archiver = modules.messageArchiver,
            // What the account blocked never arrives, so it is not kept either.
            policy.verdict(from: sender, to: account, stanza: message) == .deliver
        else { return message }
        return archiver(message, sender, account.bare).forRecipient
    }
}
