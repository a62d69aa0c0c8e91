import ParleyCore

/// One session in a room as the room's broadcasts see it: its `to` attribute, made once when
/// it enters, and whether its occupant is a moderator (who sees real JIDs in a
/// semi-anonymous room). Filling a room of N sends about N² presence stanzas: spelling the
/// recipient's JID out and allocating its attribute list for each copy, and copying each
/// recipient occupant's record (a dozen reference-counted fields) to reach its sessions and
/// role, were most of the room's own share of a fill, and the copies' strings and lists
/// stayed behind in the heap (bench/README.md, MUC, fourth round).
///
/// A room that has been quiet for a while lets the `to`s go (`MUCRoom.releaseRecipients`),
/// and its next entry, message or departure makes them again (`readyRecipients`): each was
/// two heap blocks per session (the list and the spelled-out JID), made while the room
/// filled and left on the pages of the fill's churn (bench/README.md, MUC, seventh round).
/// What uses one in between makes a copy's own.
struct MUCRecipient: Sendable {
    /// `to='session'`, shared by every copy to this session; nil while the room is quiet.
    var to: [XMLAttribute]?
    var isModerator = false

    init(_ session: JID) {
        to = Self.to(session)
    }

    /// `to='session'`, made anew.
    static func to(_ session: JID) -> [XMLAttribute] {
        [XMLAttribute("to", session.description)]
    }
}

/// Every session in a room with its `to` attribute ready: what a groupchat message is
/// copied to. Made once after the room's set of sessions changes and used by every message
/// until the next change, so a message to a hundred occupants neither copies each
/// occupant's record nor spells each session's JID out again. A new box replaces the old one
/// at each change (copies of an older room keep theirs). Guarded by the service's lock, like
/// the room.
final class MUCRecipients: @unchecked Sendable {
    private var built: [[XMLAttribute]]?
    private var builtAddresses: [JID]?

    /// Each session in `recipients` with its `to` attribute, in one order: what a groupchat
    /// message's copies are addressed to, handed on to the router already parsed (parsing or
    /// looking up each copy's address again was most of `MUCService.send`'s share).
    func addressed(_ recipients: [JID: MUCRecipient]) -> (sessions: [JID], to: [[XMLAttribute]]) {
        if let builtAddresses, let built { return (builtAddresses, built) }
        var sessions: [JID] = []
        var to: [[XMLAttribute]] = []
        sessions.reserveCapacity(recipients.count)
        to.reserveCapacity(recipients.count)
        for (session, recipient) in recipients {
            sessions.append(session)
            to.append(recipient.to ?? MUCRecipient.to(session))
        }
        (builtAddresses, built) = (sessions, to)
        return (sessions, to)
    }
}
