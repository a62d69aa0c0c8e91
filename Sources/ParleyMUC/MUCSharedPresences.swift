import ParleyCore

/// The distinct presences a room's occupants keep, so that occupants whose presence is the
/// same (most of a room's: the avatar hash element a server adds, one client's caps) keep one
/// instance of it, its child lists shared, instead of a copy each. A room of N kept N copies,
/// each two or more small heap blocks made while the room filled and left on the pages of
/// the fill's churn (bench/README.md, MUC, seventh round).
///
/// Holds at most `limit` presences: past it, it starts afresh (the occupants keep theirs).
struct MUCSharedPresences: Sendable {
    static let limit = 64

    private var presences = Set<XMLElement>()

    /// The instance kept with the content of `presence`, or `presence`, now kept.
    mutating func instance(of presence: XMLElement) -> XMLElement {
        if presences.count >= Self.limit, !presences.contains(presence) { presences = [] }
        return presences.insert(presence).memberAfterInsert
    }

    /// How many distinct presences are kept (for tests).
    var count: Int { presences.count }
}
