import Foundation
import ParleyStorage
import PostgresNIO

/// The group commit's statements for many rows at once. A batch of thousands of messages used
/// to cost thousands of round trips to the server (an account look-up, the preferences and an
/// INSERT per row); each of these is one round trip per batch (per `rowsPerStatement` rows
/// for the INSERTs), whatever the batch holds.
enum PostgresBatchRows {
    /// PostgreSQL takes at most 65,535 parameters per statement; 11 per archive row.
    static let rowsPerStatement = 2_000

    /// The ids of `usernames`' accounts, locked against deletion until the transaction ends
    /// (`FOR KEY SHARE`, as `accountID(of:lock:)`); the missing ones are absent. Locked in
    /// name order, so two writers never wait on each other crosswise.
    static func accountIDs(of usernames: Set<String>, _ connection: PostgresConnection, logger: Logger) async throws -> [String: Int64] {
        guard !usernames.isEmpty else { return [:] }
        var ids: [String: Int64] = [:]
        let names = usernames.sorted()
        for row in try await connection.rows(
            "SELECT username, id FROM accounts WHERE username = ANY(\(names)) ORDER BY username FOR KEY SHARE", logger: logger)
        {
            let (name, id) = try row.decode((String, Int64).self)
            ids[name] = id
        }
        return ids
    }

    /// How many offline messages each of `accountIDs` holds (0 for those with none).
    static func offlineCounts(of accountIDs: Set<Int64>, _ connection: PostgresConnection, logger: Logger) async throws -> [Int64: Int] {
        guard !accountIDs.isEmpty else { return [:] }
        var counts = Dictionary(uniqueKeysWithValues: accountIDs.map { ($0, 0) })
        for row in try await connection.rows(
            """
            SELECT account_id, COUNT(*) FROM offline_messages WHERE account_id = ANY(\(Array(accountIDs)))
            GROUP BY account_id
            """, logger: logger)
        {
            let (id, count) = try row.decode((Int64, Int64).self)
            counts[id] = Int(count)
        }
        return counts
    }

    /// Inserts offline messages in the given order and returns their ids in that order.
    /// PostgreSQL evaluates a VALUES list's rows, and so the id sequence's defaults, in order,
    /// and RETURNING gives the rows as inserted.
    static func insertOffline(
        _ rows: [(accountID: Int64, stanza: String)], storedAt: Int64, _ connection: PostgresConnection, logger: Logger
    ) async throws -> [Int64] {
        var ids: [Int64] = []
        ids.reserveCapacity(rows.count)
        for start in stride(from: 0, to: rows.count, by: rowsPerStatement) {
            let chunk = rows[start..<min(start + rowsPerStatement, rows.count)]
            var binds = PostgresBindings(capacity: chunk.count * 2 + 1)
            binds.append(storedAt)
            var sql = "INSERT INTO offline_messages (account_id, stanza, stored_at) VALUES "
            for (index, row) in chunk.enumerated() {
                binds.append(row.accountID)
                binds.append(row.stanza)
                sql += (index == 0 ? "" : ", ") + "($\(binds.count - 1), $\(binds.count), $1)"
            }
            sql += " RETURNING id"
            for row in try await connection.rows(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger) {
                ids.append(try row.decode(Int64.self))
            }
        }
        guard ids.count == rows.count else {
            throw StorageError.unusableDatabase("an offline INSERT returned \(ids.count) ids for \(rows.count) rows")
        }
        return ids
    }

    /// One archive row, as `writeArchive` decided to keep it.
    struct ArchiveRow {
        var accountID: Int64
        var entry: ArchiveEntry
        var fromBare: String
    }

    static func insertArchive(_ rows: [ArchiveRow], _ connection: PostgresConnection, logger: Logger) async throws {
        for start in stride(from: 0, to: rows.count, by: rowsPerStatement) {
            let chunk = rows[start..<min(start + rowsPerStatement, rows.count)]
            var binds = PostgresBindings(capacity: chunk.count * 11)
            var sql = """
                INSERT INTO archive_messages
                    (account_id, with_bare, from_bare, from_jid, to_jid, stanza_id, origin_id, message_id, message_type,
                     stanza, archived_at)
                VALUES
                """
            for (index, row) in chunk.enumerated() {
                let first = binds.count + 1
                let entry = row.entry
                binds.append(row.accountID)
                binds.append(entry.with)
                binds.append(row.fromBare)
                binds.append(entry.from)
                binds.append(entry.to)
                binds.append(entry.stanzaID)
                appendText(entry.originID, to: &binds)
                appendText(entry.messageID, to: &binds)
                appendText(entry.messageType, to: &binds)
                binds.append(entry.stanza)
                binds.append(Milliseconds.from(entry.archivedAt))
                sql += (index == 0 ? " (" : ", (") + (first..<first + 11).map { "$\($0)" }.joined(separator: ", ") + ")"
            }
            try await connection.run(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
        }
    }

    /// An absent value is a NULL; the server takes its type from the column.
    private static func appendText(_ value: String?, to binds: inout PostgresBindings) {
        if let value { binds.append(value) } else { binds.append(String?.none) }
    }

    /// Every account's archive preferences, in two queries for all of them.
    static func archivePreferences(
        of accountIDs: Set<Int64>, _ connection: PostgresConnection, logger: Logger
    ) async throws -> [Int64: ArchivePreferences] {
        guard !accountIDs.isEmpty else { return [:] }
        let ids = Array(accountIDs)
        var preferences = Dictionary(uniqueKeysWithValues: accountIDs.map { ($0, ArchivePreferences(defaultMode: .always)) })
        for row in try await connection.rows(
            "SELECT account_id, default_mode FROM archive_preferences WHERE account_id = ANY(\(ids))", logger: logger)
        {
            let (id, mode) = try row.decode((Int64, String).self)
            preferences[id]?.defaultMode = ArchivePreferences.Default(rawValue: mode) ?? .always
        }
        for row in try await connection.rows(
            "SELECT account_id, jid, archive FROM archive_preference_jids WHERE account_id = ANY(\(ids)) ORDER BY account_id, jid",
            logger: logger)
        {
            let (id, jid, archive) = try row.decode((Int64, String, Bool).self)
            if archive { preferences[id]?.always.append(jid) } else { preferences[id]?.never.append(jid) }
        }
        return preferences
    }

    /// Cuts every account of `accountIDs` back to its newest `keeping` rows, in one statement.
    static func trimArchives(of accountIDs: Set<Int64>, keeping: Int, _ connection: PostgresConnection, logger: Logger) async throws {
        guard !accountIDs.isEmpty else { return }
        let offset = Int64(max(keeping, 0))
        try await connection.run(
            """
            DELETE FROM archive_messages AS doomed USING (
                SELECT account.id AS account_id, (
                    SELECT id FROM archive_messages WHERE account_id = account.id ORDER BY id DESC LIMIT 1 OFFSET \(offset)
                ) AS last_cut
                FROM unnest(\(Array(accountIDs))::bigint[]) AS account(id)
            ) AS cut
            WHERE doomed.account_id = cut.account_id AND doomed.id <= cut.last_cut
            """, logger: logger)
    }
}
