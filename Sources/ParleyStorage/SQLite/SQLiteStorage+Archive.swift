import Foundation
import GRDB

extension SQLiteStorage: ArchiveStore {
    /// Joins the offline messages' group commit: when both are waiting (a message to an
    /// offline account is stored there and archived for both parties), one transaction and
    /// one fsync take them together.
    public func archive(_ entries: [ArchiveEntry], maxPerUser: Int?) async throws {
        guard !entries.isEmpty else { return }
        _ = try await offlineWriter.submit(user: "", .archive(entries: entries, maxPerUser: maxPerUser))
    }

    /// The archive's rows for `entries`, inside the caller's transaction.
    static func writeArchive(_ entries: [ArchiveEntry], maxPerUser: Int?, options: Options, in db: Database) throws {
        var accounts: [String: Int64?] = [:]
        var preferences: [Int64: ArchivePreferences] = [:]
        var touched: Set<Int64> = []
        // Times never go backwards along the archive order (v17_archive_rows): a start/end
        // filter and the retention sweep find their bound through the order, without an
        // index of their own. A clock set back, or entries stamped on different threads a
        // moment apart, keep the newest time so far instead.
        var lastArchivedAt =
            try Int64.fetchOne(db.cachedStatement(sql: "SELECT archived_at FROM archive_messages ORDER BY id DESC LIMIT 1")) ?? 0
        let insert = try db.cachedStatement(
            sql: """
                INSERT INTO archive_messages
                    (account_id, with_bare, from_bare, from_jid, to_jid, stanza_id, origin_id, message_id, message_type,
                     stanza, archived_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
        // Two statements, not one with OR: each is served by its own index (an OR of the
        // two made SQLite walk the account's whole archive).
        let retractByStanzaID = try db.cachedStatement(
            sql: """
                UPDATE archive_messages SET stanza = NULL, retracted_at = ?
                WHERE account_id = ? AND stanza_id = ? AND from_bare = ? AND retracted_at IS NULL
                """)
        let retractByOriginID = try db.cachedStatement(
            sql: """
                UPDATE archive_messages SET stanza = NULL, retracted_at = ?
                WHERE account_id = ? AND origin_id = ? AND from_bare = ? AND retracted_at IS NULL
                """)
        for entry in entries {
            let cached = try accounts[entry.owner] ?? Self.accountID(of: entry.owner, in: db)
            accounts[entry.owner] = cached
            guard let accountID = cached else { continue }
            let fromBare = Self.bare(entry.from)
            if let target = entry.retracts {
                let arguments: StatementArguments = [Self.milliseconds(entry.archivedAt), accountID, target, fromBare]
                try retractByStanzaID.execute(arguments: arguments)
                try retractByOriginID.execute(arguments: arguments)
            }
            if preferences[accountID] == nil { preferences[accountID] = try Self.preferences(of: accountID, in: db) }
            guard try Self.shouldArchive(with: entry.with, preferences: preferences[accountID]!, accountID: accountID, in: db) else {
                continue
            }
            lastArchivedAt = max(lastArchivedAt, Self.milliseconds(entry.archivedAt))
            try insert.execute(arguments: [
                accountID, entry.with, fromBare, entry.from, entry.to, entry.stanzaID, entry.originID, entry.messageID,
                entry.messageType, entry.stanza, lastArchivedAt,
            ])
            touched.insert(accountID)
        }
        if let maxPerUser {
            let trim = try db.cachedStatement(
                sql: """
                    DELETE FROM archive_messages WHERE account_id = ? AND id <= (
                        SELECT id FROM archive_messages WHERE account_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)
                    """)
            for accountID in touched {
                try trim.execute(arguments: [accountID, accountID, max(maxPerUser, 0)])
            }
        }
        options.beforeArchiveCommit?()
    }

    public func queryArchive(user: String, _ query: ArchiveQuery) async throws -> ArchivePage {
        try await pool.read { db in
            guard let accountID = try Self.accountID(of: user, in: db) else {
                return ArchivePage(messages: [], complete: true, count: 0, firstIndex: nil)
            }
            var filter = "account_id = ?"
            var arguments: StatementArguments = [accountID]
            if let with = query.with {
                if query.withIsFull {
                    filter += " AND (from_jid = ? OR to_jid = ?)"
                    arguments += [with, with]
                } else {
                    filter += " AND with_bare = ?"
                    arguments += [with]
                }
            }
            // Times follow the archive order, so each bound is one row: the newest message
            // before `start` (looked for from the newest end, where catching-up queries
            // start) and the oldest after `end`.
            if let start = query.start {
                filter += """
                     AND id > COALESCE((SELECT id FROM archive_messages WHERE account_id = ? AND archived_at < ?
                                        ORDER BY id DESC LIMIT 1), -1)
                    """
                arguments += [accountID, Self.milliseconds(start)]
            }
            if let end = query.end {
                filter += """
                     AND id < COALESCE((SELECT id FROM archive_messages WHERE account_id = ? AND archived_at > ?
                                        ORDER BY id LIMIT 1), 9223372036854775807)
                    """
                arguments += [accountID, Self.milliseconds(end)]
            }
            func position(of stanzaID: String) throws -> Int64 {
                guard
                    let position = try Int64.fetchOne(
                        db, sql: "SELECT id FROM archive_messages WHERE account_id = ? AND stanza_id = ? ORDER BY id LIMIT 1",
                        arguments: [accountID, stanzaID])
                else { throw StorageError.itemNotFound("archive id '\(stanzaID)'") }
                return position
            }
            if let afterID = query.afterID {
                filter += " AND id > ?"
                arguments += [try position(of: afterID)]
            }
            if let beforeID = query.beforeID {
                filter += " AND id < ?"
                arguments += [try position(of: beforeID)]
            }
            if let ids = query.ids {
                filter += " AND stanza_id IN (\(ids.isEmpty ? "NULL" : Array(repeating: "?", count: ids.count).joined(separator: ", ")))"
                arguments += StatementArguments(ids)
            }
            let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM archive_messages WHERE \(filter)", arguments: arguments) ?? 0

            var paged = filter
            var pagedArguments = arguments
            if let after = query.after {
                paged += " AND id > ?"
                pagedArguments += [try position(of: after)]
            }
            let backwards = query.before != nil
            if let before = query.before, !before.isEmpty {
                paged += " AND id < ?"
                pagedArguments += [try position(of: before)]
            }
            let limit = max(query.max, 0)
            let columns = "id, stanza_id, origin_id, message_id, message_type, from_jid, to_jid, stanza, archived_at, retracted_at"
            var rows = try Row.fetchAll(
                db,
                sql: "SELECT \(columns) FROM archive_messages WHERE \(paged) ORDER BY id \(backwards ? "DESC" : "ASC") LIMIT ?",
                arguments: pagedArguments + [limit + 1])
            let complete = rows.count <= limit
            rows = Array(rows.prefix(limit))
            if backwards { rows.reverse() }
            let messages = rows.map { row in
                ArchivedMessage(
                    position: row["id"], stanzaID: row["stanza_id"], originID: row["origin_id"], messageID: row["message_id"],
                    messageType: row["message_type"], from: row["from_jid"], to: row["to_jid"], stanza: row["stanza"], archivedAt: Self.date(milliseconds: row["archived_at"]),
                    retractedAt: (row["retracted_at"] as Int64?).map(Self.date(milliseconds:)))
            }
            var firstIndex: Int?
            if let first = messages.first {
                firstIndex = try Int.fetchOne(
                    db, sql: "SELECT COUNT(*) FROM archive_messages WHERE \(filter) AND id < ?", arguments: arguments + [first.position])
            }
            return ArchivePage(messages: messages, complete: complete, count: count, firstIndex: firstIndex)
        }
    }

    public func recentOriginIDs(of user: String, sentAs bareJID: String, limit: Int) async throws -> [SentOriginID] {
        try await pool.read { db in
            guard let accountID = try Self.accountID(of: user, in: db) else { return [] }
            // Served by the partial index archive_messages_sent: no scan of received messages.
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT with_bare, origin_id FROM archive_messages
                    WHERE account_id = ? AND from_bare = ? AND origin_id IS NOT NULL
                    ORDER BY id DESC LIMIT ?
                    """, arguments: [accountID, bareJID, max(limit, 0)])
            return rows.map { SentOriginID(to: $0["with_bare"], originID: $0["origin_id"]) }
        }
    }

    public func archivePreferences(of user: String) async throws -> ArchivePreferences {
        try await pool.read { db in
            guard let accountID = try Self.accountID(of: user, in: db) else { return ArchivePreferences() }
            return try Self.preferences(of: accountID, in: db)
        }
    }

    public func setArchivePreferences(_ preferences: ArchivePreferences, of user: String) async throws {
        try await pool.write { db in
            let accountID = try Self.existingAccountID(of: user, in: db)
            try db.execute(
                sql: """
                    INSERT INTO archive_preferences (account_id, default_mode) VALUES (?, ?)
                    ON CONFLICT (account_id) DO UPDATE SET default_mode = excluded.default_mode
                    """, arguments: [accountID, preferences.defaultMode.rawValue])
            try db.execute(sql: "DELETE FROM archive_preference_jids WHERE account_id = ?", arguments: [accountID])
            let insert = try db.cachedStatement(
                sql: "INSERT INTO archive_preference_jids (account_id, jid, archive) VALUES (?, ?, ?) ON CONFLICT DO UPDATE SET archive = excluded.archive")
            // A JID in both lists is never archived: the stricter choice wins.
            for jid in preferences.always { try insert.execute(arguments: [accountID, jid, 1]) }
            for jid in preferences.never { try insert.execute(arguments: [accountID, jid, 0]) }
        }
    }

    @discardableResult
    public func pruneArchive(before date: Date) async throws -> Int {
        try await pool.write { db in
            // Times follow the archive order (v17_archive_rows): everything before the oldest
            // row at or after `date`, found by walking from the oldest end through the rows
            // that go anyway.
            try db.execute(
                sql: """
                    DELETE FROM archive_messages WHERE id < COALESCE(
                        (SELECT id FROM archive_messages WHERE archived_at >= ? ORDER BY id LIMIT 1),
                        (SELECT MAX(id) + 1 FROM archive_messages))
                    """,
                arguments: [Self.milliseconds(date)])
            return db.changesCount
        }
    }

    // MARK: Helpers

    static func preferences(of accountID: Int64, in db: Database) throws -> ArchivePreferences {
        // Cached statements: the writer asks this for every account of every batch.
        let mode = try String.fetchOne(
            db.cachedStatement(sql: "SELECT default_mode FROM archive_preferences WHERE account_id = ?"), arguments: [accountID])
        var preferences = ArchivePreferences(defaultMode: mode.flatMap(ArchivePreferences.Default.init(rawValue:)) ?? .always)
        for row in try Row.fetchAll(
            db.cachedStatement(sql: "SELECT jid, archive FROM archive_preference_jids WHERE account_id = ? ORDER BY jid"),
            arguments: [accountID])
        {
            let archive: Bool = row["archive"]
            if archive { preferences.always.append(row["jid"]) } else { preferences.never.append(row["jid"]) }
        }
        return preferences
    }

    /// XEP-0313 §6: the lists decide first, then the default (`roster`: the contact is in
    /// the owner's roster).
    static func shouldArchive(with contact: String, preferences: ArchivePreferences, accountID: Int64, in db: Database) throws -> Bool {
        if preferences.never.contains(contact) { return false }
        if preferences.always.contains(contact) { return true }
        switch preferences.defaultMode {
        case .always: return true
        case .never: return false
        case .roster:
            return try Bool.fetchOne(
                db, sql: "SELECT EXISTS (SELECT 1 FROM roster_items WHERE account_id = ? AND contact = ?)",
                arguments: [accountID, contact]) ?? false
        }
    }

    static func bare(_ jid: String) -> String {
        jid.firstIndex(of: "/").map { String(jid[..<$0]) } ?? jid
    }

    static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
    }

    static func date(milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}
