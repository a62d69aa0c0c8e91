import ParleyCore

/// A hosted service through which local users also talk one to one: a multi-user chat room's
/// occupants send each other private messages at their occupant JIDs (XEP-0045 §7.5). Such
/// a message is part of the account's conversations, so the server keeps it in the archives
/// of the local accounts on either side and copies what one device sent to the devices that
/// take part as the same participant (XEP-0280 §6's rules for MUC private messages); only
/// the service knows who that is.
public protocol PrivateMessageService: HostedService {
    /// For a message from the local session `session` to `address` at the service: how it
    /// is a private message, or nil when it is none (the sender does not take part, no one
    /// has that address, or the service refuses it).
    func privateMessageRoute(from session: JID, to address: JID) -> PrivateMessageRoute?
}

public struct PrivateMessageRoute: Sendable {
    /// The sessions of the sender's account that take part under the same identity (a
    /// multi-session nickname), the sender's included: the only ones its carbons go to, as
    /// the others could neither place nor answer the message.
    public var participants: [JID]
    /// The element that marks a private message through the service, added to the copies
    /// the sender's account keeps when the client left it out (XEP-0045 §7.5 asks clients
    /// for `<x xmlns='http://jabber.org/protocol/muc#user'/>`; older ones omit it).
    public var marker: XMLElement?

    public init(participants: [JID], marker: XMLElement?) {
        self.participants = participants
        self.marker = marker
    }
}

extension HostedServiceOutlet {
    /// A private message the service is about to deliver to the local `account` (to each of
    /// its sessions that take part): stored once in that account's archive (XEP-0313, with
    /// the service's bare JID as the peer, as Prosody's mod_mam keeps them) and returned with
    /// the archive's stanza-id, which every copy should carry; unchanged when the message is
    /// not archived.
    public func archivePrivateMessage(_ message: XMLElement, from sender: JID, to account: JID) -> XMLElement {
        router.archiveHostedPrivateMessage(message, from: sender, to: account)
    }
}
