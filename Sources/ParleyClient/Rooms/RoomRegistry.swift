import Foundation
import ParleyCore

/// What the client keeps about its rooms while it runs: the rooms it is in or entering,
/// the joins and requests waiting for the room's answer, and archive pages being collected.
struct RoomRegistry {
    struct Room {
        var jid: JID
        var nick: String
        var password: String?
        var occupants: [String: RoomOccupant] = [:]
        var subject: String?
        /// Our own presence came back (status 110): we are in.
        var inRoom = false
        var created = false
        /// The entry is complete (the subject came): later subjects are changes.
        var entered = false
        /// Entering again after a reconnect: the application hears `.rejoined`.
        var rejoining = false
        /// We asked to leave: our unavailable presence means `.left`, not a removal.
        var leaving = false
        /// The newest message's time, so a rejoin asks only for what came after it.
        var lastActivity: Date?
        /// Ids of recent messages, so history replayed on a rejoin is not shown twice even
        /// without a cache.
        var recentIDs: [String] = []

        static let recentLimit = 500

        mutating func remember(_ id: String) -> Bool {
            guard !recentIDs.contains(id) else { return false }
            recentIDs.append(id)
            if recentIDs.count > Self.recentLimit { recentIDs.removeFirst(recentIDs.count - Self.recentLimit) }
            return true
        }

        var summary: JoinedRoom {
            JoinedRoom(jid: jid, nick: nick, subject: subject, occupants: occupants.values.sorted { $0.nick < $1.nick }, created: created)
        }
    }

    var rooms: [JID: Room] = [:]
    /// Joins waiting for the room's answer, by room JID.
    var joins: [JID: (token: UUID, continuation: CheckedContinuation<JoinedRoom, any Error>)] = [:]
    /// Room messages waiting for their echo or their error, by message id (subject changes).
    var echoes: [String: CheckedContinuation<Void, any Error>] = [:]
    /// Our subject change waiting for the room's announcement, by room: some rooms (Prosody)
    /// announce it under an id of their own, so it is recognized by sender and text too.
    var subjectChanges: [JID: (id: String, text: String)] = [:]
    /// Results of our archive queries to rooms, by query id.
    var archivePages: [String: [RoomMessage]] = [:]
}
