import ParleyCore

/// One session in a room as the room's broadcasts see it: its `to` attribute, made once when
/// it enters, and whether its occupant is a moderator (who sees real JIDs in a
/// semi-anonymous room). Filling a room of N sends about N² presence stanzas: spelling the
/// recipient's JID out and allocating its attribute list for each copy, and copying each
/// recipient occupant's record (a dozen reference-counted fields) to reach its sessions and
/// role, were most of the room's own share of a fill, and the copies' strings and lists
/// stayed behind in the heap (bench/README.md, MUC, fourth round).
struct MUCRecipient: Sendable {
    /// `to='session'`, shared by every copy to this session.
    let to: [XMLAttribute]
    var isModerator = false

    init(_ session: JID) {
        to = [XMLAttribute("to", session.description)]
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

    /// One attribute list (just `to`) per session in `sessions`.
    func toAttributes(_ sessions: Dictionary<JID, MUCRecipient>.Values) -> [[XMLAttribute]] {
        if let built { return built }
        let made = sessions.map(\.to)
        built = made
        return made
    }

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
            to.append(recipient.to)
        }
        (builtAddresses, built) = (sessions, to)
        return (sessions, to)
    }
}
