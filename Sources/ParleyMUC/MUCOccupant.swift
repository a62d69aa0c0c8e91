import ParleyCore

/// One nickname in a room: an account, present from one or more of its sessions (devices).
/// Every session gets the room's traffic; the others see one occupant.
struct MUCOccupant: Sendable {
    var nick: String
    /// The account's bare JID.
    let account: JID
    /// The sessions in the room, in the order they joined.
    var sessions: [JID]
    var role: MUCRole
    /// XEP-0421: the same for this account in this room whatever its nickname or device.
    let occupantID: String
    /// The presence the occupant last sent (show, status, caps…): what the others see.
    var presence: XMLElement
    /// Its groupchat rate limit's state (MUCRateLimiter).
    var speech = MUCTokenBucket()

    /// The real JID shown to those allowed to see it: the session that joined first.
    var realJID: JID { sessions.first ?? account }
}
