import ParleyCore

/// Every session in a room with its `to` attribute ready: what a groupchat message is
/// copied to. Made once after the room's set of sessions changes and used by every message
/// until the next change, so a message to a hundred occupants neither copies each
/// occupant's record (a dozen reference-counted fields) nor spells each session's JID out
/// again. A new box replaces the old one at each change (copies of an older room keep
/// theirs). Guarded by the service's lock, like the room.
final class MUCRecipients: @unchecked Sendable {
    private var built: [[XMLAttribute]]?

    /// One attribute list (just `to`) per session in `sessions`.
    func toAttributes(_ sessions: Dictionary<JID, String>.Keys) -> [[XMLAttribute]] {
        if let built { return built }
        let made = sessions.map { [XMLAttribute("to", $0.description)] }
        built = made
        return made
    }
}
