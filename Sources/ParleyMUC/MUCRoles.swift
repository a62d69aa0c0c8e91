/// XEP-0045 §5.2: a user's long-lived standing in a room.
enum MUCAffiliation: String, Sendable, Hashable {
    case owner, admin, member, outcast, none
}

/// XEP-0045 §5.1: an occupant's standing while it is in the room.
enum MUCRole: String, Sendable, Hashable {
    case moderator, participant, visitor, none
}
