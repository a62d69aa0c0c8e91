import Foundation
import GRDB

/// The parts of a stored room kept apart from its muc_rooms row's original columns: whether
/// it archives (v12), its vCard (v13), who may send private messages (v19), its occupant
/// limit and who may invite (v21), read and written in the same transaction as the row.
extension SQLiteStorage {
    static func readMUCRoomExtras(of room: inout StoredMUCRoom, _ row: Row, in db: Database) throws {
        room.archiving = row["archiving"] ?? true
        room.allowPrivateMessages = row["allow_pm"] ?? "anyone"
        room.maxOccupants = row["max_occupants"] ?? 0
        room.membersMayInvite = row["members_may_invite"] ?? false
        let vCard = try Row.fetchOne(
            db, sql: "SELECT vcard, photo_hash FROM muc_vcards WHERE service = ? AND room = ?", arguments: [room.service, room.name])
        room.vCard = vCard?["vcard"]
        room.photoHash = vCard?["photo_hash"]
    }

    static func writeMUCRoomExtras(of room: StoredMUCRoom, in db: Database) throws {
        try db.execute(
            sql: """
                UPDATE muc_rooms SET archiving = ?, allow_pm = ?, max_occupants = ?, members_may_invite = ?
                WHERE service = ? AND name = ?
                """,
            arguments: [room.archiving, room.allowPrivateMessages, room.maxOccupants, room.membersMayInvite, room.service, room.name])
        guard let vCard = room.vCard else {
            try db.execute(sql: "DELETE FROM muc_vcards WHERE service = ? AND room = ?", arguments: [room.service, room.name])
            return
        }
        // Most saves change something else (the subject, an affiliation): the vCard, up to
        // tens of kilobytes, is rewritten only when it changed.
        try db.execute(
            sql: """
                INSERT INTO muc_vcards (service, room, vcard, photo_hash) VALUES (?, ?, ?, ?)
                ON CONFLICT (service, room) DO UPDATE SET vcard = excluded.vcard, photo_hash = excluded.photo_hash
                WHERE vcard IS NOT excluded.vcard
                """,
            arguments: [room.service, room.name, vCard, room.photoHash])
    }
}
