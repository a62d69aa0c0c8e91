import ParleyCore

/// What happens in the rooms we are in (XEP-0045), on `ClientEvent.room`.
public enum RoomEvent: Sendable, Equatable {
    /// We are in: the occupant list and history arrived (or the room was just created).
    case joined(JoinedRoom)
    /// After a reconnect the room no longer had us, and we entered again; what was said
    /// meanwhile came as history, and `occupants(of:)` is the room's list as it is now.
    case rejoined(room: JID, nick: String)
    /// A groupchat message; history replayed on entry has `delayedUntil` set.
    case message(RoomMessage)
    /// A private message from an occupant (XEP-0045 §7.5).
    case privateMessage(RoomMessage)
    case occupantJoined(room: JID, RoomOccupant)
    /// Someone left; `removal` says why when they did not leave by themselves.
    case occupantLeft(room: JID, RoomOccupant, removal: RoomRemoval?)
    /// An occupant's role, affiliation or status changed (ours too).
    case occupantChanged(room: JID, RoomOccupant)
    case nickChanged(room: JID, from: String, to: String)
    case subjectChanged(room: JID, subject: String, by: String?)
    case invited(RoomInvitation)
    case invitationDeclined(room: JID, by: JID, reason: String?)
    /// We are out of the room by someone else's doing: kicked, banned, the room destroyed.
    case removed(room: JID, RoomRemoval)
    /// We left, as asked.
    case left(room: JID)
}

extension RoomEvent {
    /// The room the event is about.
    public var room: JID {
        switch self {
        case .joined(let joined): joined.jid
        case .message(let message), .privateMessage(let message): message.room
        case .invited(let invitation): invitation.room
        case .rejoined(let room, _), .occupantJoined(let room, _), .occupantLeft(let room, _, _), .occupantChanged(let room, _),
            .nickChanged(let room, _, _), .subjectChanged(let room, _, _), .invitationDeclined(let room, _, _), .removed(let room, _),
            .left(let room):
            room
        }
    }
}
