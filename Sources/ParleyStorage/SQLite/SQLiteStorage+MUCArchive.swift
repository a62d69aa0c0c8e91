import Foundation
import GRDB

extension SQLiteStorage: MUCArchiveStore {
    public func appendMUCArchive(_ entries: [MUCArchiveEntry], maxPerRoom: Int?) async throws {
        guard !entries.isEmpty else { return }
        try await pool.write { db in try Self.appendMUCArchive(entries, maxPerRoom: maxPerRoom, in: db) }
    }

    /// GRDB's synchronous write, on the caller's thread: no hop to the writer's queue and
    /// back to a task, as the `async` one makes.
    public func appendMUCArchiveBlocking(_ entries: [MUCArchiveEntry], maxPerRoom: Int?) throws {
        guard !entries.isEmpty else { return }
        try pool.write { db in try Self.appendMUCArchive(entries, maxPerRoom: maxPerRoom, in: db) }
    }

    private static func appendMUCArchive(_ entries: [MUCArchiveEntry], maxPerRoom: Int?, in db: Database) throws {
        let insert = try db.cachedStatement(
            sql: """
                INSERT INTO muc_archive (service, room, stanza_id, nick, account_id, sender_jid, stanza, archived_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """)
        var accounts: [String: Int64?] = [:]
        var touched: [String: Set<String>] = [:]
        for entry in entries {
            var accountID: Int64? = nil
            if let username = entry.senderUsername {
                let cached = try accounts[username] ?? Self.accountID(of: username, in: db)
                accounts[username] = cached
                accountID = cached
            }
            try insert.execute(arguments: [
                entry.service, entry.room, entry.stanzaID, entry.nick, accountID, entry.senderJID, entry.stanza,
                Self.milliseconds(entry.archivedAt),
            ])
            touched[entry.service, default: []].insert(entry.room)
        }
        guard let maxPerRoom else { return }
        let trim = try db.cachedStatement(
            sql: """
                DELETE FROM muc_archive WHERE service = ? AND room = ? AND id <= (
                    SELECT id FROM muc_archive WHERE service = ? AND room = ? ORDER BY id DESC LIMIT 1 OFFSET ?)
                """)
        for (service, rooms) in touched {
            for room in rooms { try trim.execute(arguments: [service, room, service, room, max(maxPerRoom, 0)]) }
        }
    }

    public func queryMUCArchive(service: String, room: String, _ query: MUCArchiveQuery) async throws -> MUCArchivePage {
        try await pool.read { db in
            var filter = "muc_archive.service = ? AND muc_archive.room = ?"
            var arguments: StatementArguments = [service, room]
            if let nick = query.nick {
                filter += " AND muc_archive.nick = ?"
                arguments += [nick]
            }
            if let username = query.senderUsername {
                filter += " AND muc_archive.account_id = (SELECT id FROM accounts WHERE username = ?)"
                arguments += [username]
            }
            if let jid = query.senderJID {
                filter += " AND muc_archive.sender_jid = ?"
                arguments += [jid]
            }
            if let start = query.start {
                filter += " AND muc_archive.archived_at >= ?"
                arguments += [Self.milliseconds(start)]
            }
            if let end = query.end {
                filter += " AND muc_archive.archived_at <= ?"
                arguments += [Self.milliseconds(end)]
            }
            func position(of stanzaID: String) throws -> Int64 {
                guard
                    let position = try Int64.fetchOne(
                        db, sql: "SELECT id FROM muc_archive WHERE service = ? AND room = ? AND stanza_id = ? ORDER BY id LIMIT 1",
                        arguments: [service, room, stanzaID])
                else { throw StorageError.itemNotFound("room archive id '\(stanzaID)'") }
                return position
            }
            if let afterID = query.afterID {
                filter += " AND muc_archive.id > ?"
                arguments += [try position(of: afterID)]
            }
            if let beforeID = query.beforeID {
                filter += " AND muc_archive.id < ?"
                arguments += [try position(of: beforeID)]
            }
            if let ids = query.ids {
                filter += " AND muc_archive.stanza_id IN (\(ids.isEmpty ? "NULL" : Array(repeating: "?", count: ids.count).joined(separator: ", ")))"
                arguments += StatementArguments(ids)
            }
            let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM muc_archive WHERE \(filter)", arguments: arguments) ?? 0
            var paged = filter
            if let after = query.after {
                paged += " AND muc_archive.id > ?"
                arguments += [try position(of: after)]
            }
            let backwards = query.before != nil
            if let before = query.before, !before.isEmpty {
                paged += " AND muc_archive.id < ?"
                arguments += [try position(of: before)]
            }
            let limit = max(query.max, 0)
            var rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT muc_archive.id, stanza_id, nick, accounts.username, sender_jid, stanza, archived_at
                    FROM muc_archive LEFT JOIN accounts ON accounts.id = muc_archive.account_id
                    WHERE \(paged) ORDER BY muc_archive.id \(backwards ? "DESC" : "ASC") LIMIT ?
                    """,
                arguments: arguments + [limit + 1])
            let complete = rows.count <= limit
            rows = Array(rows.prefix(limit))
            if backwards { rows.reverse() }
            return MUCArchivePage(messages: rows.map(Self.archivedRoomMessage), complete: complete, count: count)
        }
    }

    public func mucArchiveTails(service: String, limit: Int) async throws -> [String: [MUCArchivedMessage]] {
        try await pool.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM (
                        SELECT muc_archive.id, room, stanza_id, nick, accounts.username, sender_jid, stanza, archived_at,
                            ROW_NUMBER() OVER (PARTITION BY room ORDER BY muc_archive.id DESC) AS newest
                        FROM muc_archive LEFT JOIN accounts ON accounts.id = muc_archive.account_id
                        WHERE service = ?)
                    WHERE newest <= ? ORDER BY room, id
                    """, arguments: [service, max(limit, 0)])
            var tails: [String: [MUCArchivedMessage]] = [:]
            for row in rows { tails[row["room"], default: []].append(Self.archivedRoomMessage(row)) }
            return tails
        }
    }

    public func deleteMUCArchive(service: String, room: String) async throws {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM muc_archive WHERE service = ? AND room = ?", arguments: [service, room])
        }
    }

    public func deleteUnstoredMUCArchives(service: String) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "DELETE FROM muc_archive WHERE service = ? AND room NOT IN (SELECT name FROM muc_rooms WHERE service = ?)",
                arguments: [service, service])
        }
    }

    @discardableResult
    public func pruneMUCArchive(before date: Date) async throws -> Int {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM muc_archive WHERE archived_at < ?", arguments: [Self.milliseconds(date)])
            return db.changesCount
        }
    }

    private static func archivedRoomMessage(_ row: Row) -> MUCArchivedMessage {
        MUCArchivedMessage(
            position: row["id"], stanzaID: row["stanza_id"], nick: row["nick"], senderUsername: row["username"],
            senderJID: row["sender_jid"], stanza: row["stanza"], archivedAt: date(milliseconds: row["archived_at"]))
    }
}
