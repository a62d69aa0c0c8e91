import Foundation
import GRDB

extension SQLiteStorage: MUCRoomStore {
    public func mucRooms(of service: String) async throws -> [StoredMUCRoom] {
        try await pool.read { db in
            let rows = try Row.fetchAll(db, sql: "SELECT * FROM muc_rooms WHERE service = ? ORDER BY name", arguments: [service])
            return try rows.map { row in
                let name: String = row["name"]
                let affiliations = try Row.fetchAll(
                    db, sql: "SELECT jid, affiliation, nick FROM muc_affiliations WHERE service = ? AND room = ? ORDER BY jid",
                    arguments: [service, name]
                ).map { StoredMUCRoom.Affiliation(jid: $0["jid"], username: nil, affiliation: $0["affiliation"], nick: $0["nick"]) }
                let key: Data = row["occupant_id_key"]
                var room = StoredMUCRoom(
                    service: service, name: name, title: row["title"], description: row["description"], isPublic: row["is_public"],
                    whois: row["whois"], occupantsMayChangeSubject: row["occupants_change_subject"],
                    membersOnly: row["members_only"], password: row["password"], subject: row["subject"],
                    subjectFrom: row["subject_from"], occupantIDKey: Array(key), affiliations: affiliations)
                room.moderated = row["moderated"]
                try Self.readMUCRoomExtras(of: &room, row, in: db)
                return room
            }
        }
    }

    public func saveMUCRoom(_ room: StoredMUCRoom) async throws {
        try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO muc_rooms (service, name, title, description, is_public, whois, occupants_change_subject,
                        members_only, password, subject, subject_from, occupant_id_key)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (service, name) DO UPDATE SET title = excluded.title, description = excluded.description,
                        is_public = excluded.is_public, whois = excluded.whois,
                        occupants_change_subject = excluded.occupants_change_subject,
                        members_only = excluded.members_only, password = excluded.password, subject = excluded.subject,
                        subject_from = excluded.subject_from
                    """,
                arguments: [
                    room.service, room.name, room.title, room.description, room.isPublic, room.whois, room.occupantsMayChangeSubject,
                    room.membersOnly, room.password, room.subject, room.subjectFrom, Data(room.occupantIDKey),
                ])
            try db.execute(
                sql: "UPDATE muc_rooms SET moderated = ? WHERE service = ? AND name = ?", arguments: [room.moderated, room.service, room.name])
            try db.execute(sql: "DELETE FROM muc_affiliations WHERE service = ? AND room = ?", arguments: [room.service, room.name])
            for affiliation in room.affiliations {
                var accountID: Int64? = nil
                if let username = affiliation.username {
                    guard let id = try Self.accountID(of: username, in: db) else { continue }
                    accountID = id
                }
                try db.execute(
                    sql: "INSERT INTO muc_affiliations (service, room, jid, account_id, affiliation, nick) VALUES (?, ?, ?, ?, ?, ?)",
                    arguments: [room.service, room.name, affiliation.jid, accountID, affiliation.affiliation, affiliation.nick])
            }
            try Self.writeMUCRoomExtras(of: room, in: db)
        }
    }

    public func deleteMUCRoom(service: String, name: String) async throws {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM muc_rooms WHERE service = ? AND name = ?", arguments: [service, name])
        }
    }
}
