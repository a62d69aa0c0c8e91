import Foundation
import ParleyStorage
import PostgresNIO

extension PostgresStorage: MUCArchiveStore {
    public func appendMUCArchive(_ entries: [MUCArchiveEntry], maxPerRoom: Int?) async throws {
        guard !entries.isEmpty else { return }
        let logger = logger
        try await transaction { connection in
            var accounts: [String: Int64?] = [:]
            var touched: [String: Set<String>] = [:]
            for entry in entries {
                var accountID: Int64? = nil
                if let username = entry.senderUsername {
                    if let known = accounts[username] {
                        accountID = known
                    } else {
                        accountID = try await connection.accountID(of: username, lock: true, logger: logger)
                        accounts[username] = accountID
                    }
                }
                try await connection.run(
                    """
                    INSERT INTO muc_archive (service, room, stanza_id, nick, account_id, sender_jid, stanza, archived_at)
                    VALUES (\(entry.service), \(entry.room), \(entry.stanzaID), \(entry.nick), \(accountID), \(entry.senderJID),
                        \(entry.stanza), \(Milliseconds.from(entry.archivedAt)))
                    """, logger: logger)
                touched[entry.service, default: []].insert(entry.room)
            }
            guard let maxPerRoom else { return }
            let offset = Int64(max(maxPerRoom, 0))
            for (service, rooms) in touched {
                for room in rooms {
                    try await connection.run(
                        """
                        DELETE FROM muc_archive WHERE service = \(service) AND room = \(room) AND id <= (
                            SELECT id FROM muc_archive WHERE service = \(service) AND room = \(room)
                            ORDER BY id DESC LIMIT 1 OFFSET \(offset))
                        """, logger: logger)
                }
            }
        }
    }

    public func queryMUCArchive(service: String, room: String, _ query: MUCArchiveQuery) async throws -> MUCArchivePage {
        let logger = logger
        return try await transaction { connection in
            var filter = SQLFilter()
            filter.add("muc_archive.service = ", service)
            filter.add("muc_archive.room = ", room)
            if let nick = query.nick { filter.add("muc_archive.nick = ", nick) }
            if let username = query.senderUsername {
                filter.add("muc_archive.account_id = (SELECT id FROM accounts WHERE username = ", username, ")")
            }
            if let jid = query.senderJID { filter.add("muc_archive.sender_jid = ", jid) }
            if let start = query.start { filter.add("muc_archive.archived_at >= ", Milliseconds.from(start)) }
            if let end = query.end { filter.add("muc_archive.archived_at <= ", Milliseconds.from(end)) }
            let count = try await connection.value(
                filter.query("SELECT COUNT(*) FROM muc_archive WHERE "), as: Int64.self, logger: logger) ?? 0

            func position(of stanzaID: String) async throws -> Int64 {
                guard
                    let position = try await connection.value(
                        """
                        SELECT id FROM muc_archive WHERE service = \(service) AND room = \(room) AND stanza_id = \(stanzaID)
                        ORDER BY id LIMIT 1
                        """, as: Int64.self, logger: logger)
                else { throw StorageError.itemNotFound("room archive id '\(stanzaID)'") }
                return position
            }
            var paged = filter
            if let after = query.after { paged.add("muc_archive.id > ", try await position(of: after)) }
            let backwards = query.before != nil
            if let before = query.before, !before.isEmpty { paged.add("muc_archive.id < ", try await position(of: before)) }
            let limit = max(query.max, 0)
            var rows = try await connection.rows(
                paged.query(
                    """
                    SELECT muc_archive.id, stanza_id, nick, accounts.username, sender_jid, stanza, archived_at
                    FROM muc_archive LEFT JOIN accounts ON accounts.id = muc_archive.account_id WHERE
                    """, then: " ORDER BY muc_archive.id \(backwards ? "DESC" : "ASC") LIMIT \(limit + 1)"),
                logger: logger)
            let complete = rows.count <= limit
            rows = Array(rows.prefix(limit))
            if backwards { rows.reverse() }
            return MUCArchivePage(messages: try rows.map(Self.roomMessage), complete: complete, count: Int(count))
        }
    }

    public func mucArchiveTails(service: String, limit: Int) async throws -> [String: [MUCArchivedMessage]] {
        let logger = logger
        return try await read { connection in
            var tails: [String: [MUCArchivedMessage]] = [:]
            for row in try await connection.rows(
                """
                SELECT id, stanza_id, nick, username, sender_jid, stanza, archived_at, room FROM (
                    SELECT muc_archive.id, room, stanza_id, nick, accounts.username, sender_jid, stanza, archived_at,
                        ROW_NUMBER() OVER (PARTITION BY room ORDER BY muc_archive.id DESC) AS newest
                    FROM muc_archive LEFT JOIN accounts ON accounts.id = muc_archive.account_id
                    WHERE service = \(service)) AS ranked
                WHERE newest <= \(Int64(max(limit, 0))) ORDER BY room, id
                """, logger: logger)
            {
                let room = try row.makeRandomAccess()[7].decode(String.self)
                tails[room, default: []].append(try Self.roomMessage(row))
            }
            return tails
        }
    }

    public func deleteMUCArchive(service: String, room: String) async throws {
        let logger = logger
        try await transaction { connection in
            try await connection.run("DELETE FROM muc_archive WHERE service = \(service) AND room = \(room)", logger: logger)
        }
    }

    public func deleteUnstoredMUCArchives(service: String) async throws {
        let logger = logger
        try await transaction { connection in
            try await connection.run(
                """
                DELETE FROM muc_archive WHERE service = \(service)
                    AND room NOT IN (SELECT name FROM muc_rooms WHERE service = \(service))
                """, logger: logger)
        }
    }

    @discardableResult
    public func pruneMUCArchive(before date: Date) async throws -> Int {
        let logger = logger
        let cutoff = Milliseconds.from(date)
        return try await transaction { connection in
            Int(
                try await connection.value(
                    "WITH pruned AS (DELETE FROM muc_archive WHERE archived_at < \(cutoff) RETURNING 1) SELECT COUNT(*) FROM pruned",
                    as: Int64.self, logger: logger) ?? 0)
        }
    }

    /// A row whose first seven columns are id, stanza_id, nick, username, sender_jid, stanza, archived_at.
    private static func roomMessage(_ row: PostgresRow) throws -> MUCArchivedMessage {
        let columns = row.makeRandomAccess()
        return MUCArchivedMessage(
            position: try columns[0].decode(Int64.self), stanzaID: try columns[1].decode(String.self),
            nick: try columns[2].decode(String.self), senderUsername: try columns[3].decode(String?.self),
            senderJID: try columns[4].decode(String?.self), stanza: try columns[5].decode(String.self),
            archivedAt: Milliseconds.date(try columns[6].decode(Int64.self)))
    }
}
