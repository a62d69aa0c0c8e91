import Foundation
import GRDB
import ParleyCore

/// Rooms in the cache: their conversations sit in the conversation list next to one-to-one
/// ones (`is_room`), and their messages in the same table with the sender's nickname.
extension ChatCache {
    /// v4: `message.nick` (set for every room message, ours included, so a room message is
    /// never sent again as a one-to-one chat) and `conversation.is_room`.
    static func registerRoomMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v4-rooms") { db in
            try db.execute(sql: """
                ALTER TABLE message ADD COLUMN nick TEXT;
                ALTER TABLE conversation ADD COLUMN is_room INTEGER NOT NULL DEFAULT 0;
                """)
        }
    }

    /// The room appears in the conversation list, even before anything is said in it.
    func addRoom(_ room: JID) async throws {
        try await database.write { db in
            try db.execute(
                sql: "INSERT INTO conversation (peer, unread, is_room) VALUES (?, 0, 1) ON CONFLICT (peer) DO UPDATE SET is_room = 1",
                arguments: [room.bare.description])
        }
    }

    /// Stores a room message unless it is already there (by the room's stanza id, or our
    /// origin id for the echo of our own). Returns whether it is new, and the id of our
    /// message that the room's echo confirmed for the first time.
    func storeRoomMessage(_ record: MessageRecord, nick: String) async throws -> (isNew: Bool, acknowledged: String?) {
        try await database.write { db in
            let outgoing = record.direction == .outgoing
            if let row = try Self.existingRow(peer: record.peer, outgoing: outgoing, ids: record, db) {
                var acknowledged: String?
                if outgoing, let id = record.originID ?? record.id, try Self.acknowledge(id: id, peer: record.peer, db) { acknowledged = id }
                if let stanzaID = record.stanzaID {
                    try db.execute(sql: "UPDATE message SET stanza_id = COALESCE(stanza_id, ?) WHERE id = ?", arguments: [stanzaID, row])
                }
                return (false, acknowledged)
            }
            // Ours from another device, or from history: the room has it already.
            let state: StoredMessage.DeliveryState = outgoing && record.stanzaID != nil ? .sent : .pending
            let row = try Self.insert(record, archivePosition: nil, state: state, retracted: false, db)
            try db.execute(sql: "UPDATE message SET nick = ? WHERE id = ?", arguments: [nick, row])
            try db.execute(sql: "UPDATE conversation SET is_room = 1 WHERE peer = ?", arguments: [record.peer.bare.description])
            return (true, nil)
        }
    }
}
