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

    /// The archive's rows for `entries`, inside the caller's transaction. Consecutive entries
    /// that are copies of one message for different owners (as `ArchiveModule` queues a
    /// message between two local accounts) share one body row (v20_perf_archive); each
    /// owner gets its own entry, at the body's position.
    static func writeArchive(_ entries: [ArchiveEntry], maxPerUser: Int?, options: Options, in db: Database) throws {
        var accounts: [String: Int64?] = [:]
        var preferences: [Int64: ArchivePreferences] = [:]
        var touched: Set<Int64> = []
        // Times never go backwards along the archive order (v17_archive_rows): a start/end
        // filter and the retention sweep find their bound through the order, without an
        // index of their own. A clock set back, or entries stamped on different threads a
        // moment apart, keep the newest time so far instead.
        var lastArchivedAt =
            try Int64.fetchOne(db.cachedStatement(sql: "SELECT archived_at FROM archive_bodies ORDER BY id DESC LIMIT 1")) ?? 0
        var insertBody = try SQLiteRowInsert(db.cachedStatement(
            sql: """
                INSERT INTO archive_bodies
                    (owners, from_bare, from_jid, to_jid, stanza_id, origin_id, message_id, message_type, stanza, archived_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """))
        var insertEntry = try SQLiteRowInsert(db.cachedStatement(
            sql: "INSERT INTO archive_entries (account_id, id, with_bare, has_origin_id) VALUES (?, ?, ?, ?)"))
        // Two statements, not one with OR: each is served by its own index (an OR of the
        // two made SQLite walk the whole archive). A shared body is tombstoned for every
        // archive holding it, as the retraction's entries name them all.
        let retractByStanzaID = try db.cachedStatement(
            sql: """
                UPDATE archive_bodies SET stanza = NULL, retracted_at = ?
                WHERE stanza_id = ? AND from_bare = ? AND retracted_at IS NULL
                    AND EXISTS (SELECT 1 FROM archive_entries WHERE account_id = ? AND id = archive_bodies.id)
                """)
        let retractByOriginID = try db.cachedStatement(
            sql: """
                UPDATE archive_bodies SET stanza = NULL, retracted_at = ?
                WHERE origin_id = ? AND from_bare = ? AND retracted_at IS NULL
                    AND EXISTS (SELECT 1 FROM archive_entries WHERE account_id = ? AND id = archive_bodies.id)
                """)
        var owners: [(account: Int64, with: String)] = []
        // The entries are read in place, field by field: a copy of an `ArchiveEntry` retains
        // (and releases again) its strings and its body.
        for run in entries.sharedBodyRuns() {
            // One body for the whole run: its entries differ only in owner and other party.
            let body = entries[run.lowerBound].body
            owners.removeAll(keepingCapacity: true)
            let fromBare = Self.bare(body.from)
            for index in run {
                let owner = entries[index].owner
                let cached = try accounts[owner] ?? Self.accountID(of: owner, in: db)
                accounts[owner] = cached
                guard let accountID = cached else { continue }
                if let target = body.retracts {
                    let arguments: StatementArguments = [Self.milliseconds(body.archivedAt), target, fromBare, accountID]
                    try retractByStanzaID.execute(arguments: arguments)
                    try retractByOriginID.execute(arguments: arguments)
                }
                if preferences[accountID] == nil { preferences[accountID] = try Self.preferences(of: accountID, in: db) }
                let with = entries[index].with
                guard try Self.shouldArchive(with: with, preferences: preferences[accountID]!, accountID: accountID, in: db)
                else { continue }
                owners.append((accountID, with))
            }
            guard !owners.isEmpty else { continue }
            lastArchivedAt = max(lastArchivedAt, Self.milliseconds(body.archivedAt))
            insertBody.bind(Int64(owners.count))
            insertBody.bind(fromBare)
            insertBody.bind(body.from)
            insertBody.bind(body.to)
            insertBody.bind(body.stanzaID)
            insertBody.bind(body.originID)
            insertBody.bind(body.messageID)
            insertBody.bind(body.messageType)
            insertBody.bind(body.stanza)
            insertBody.bind(lastArchivedAt)
            try insertBody.execute(in: db)
            let position = db.lastInsertedRowID
            let hasOriginID: Int64? = body.originID == nil ? nil : 1
            for owner in owners {
                insertEntry.bind(owner.account)
                insertEntry.bind(position)
                insertEntry.bind(owner.with)
                insertEntry.bind(hasOriginID)
                try insertEntry.execute(in: db)
                touched.insert(owner.account)
            }
        }
        if let maxPerUser {
            // Deleting an entry releases its body (the archive_entries_released trigger).
            let trim = try db.cachedStatement(
                sql: """
                    DELETE FROM archive_entries WHERE account_id = ? AND id <= (
                        SELECT id FROM archive_entries WHERE account_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)
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
            // `e` is the owner's entries, `b` their bodies; the counts join the bodies only
            // when a filter reads them, so a plain count stays within the owner's index.
            var filter = "e.account_id = ?"
            var arguments: StatementArguments = [accountID]
            var readsBodies = false
            if let with = query.with {
                if query.withIsFull {
                    filter += " AND (b.from_jid = ? OR b.to_jid = ?)"
                    arguments += [with, with]
                    readsBodies = true
                } else {
                    filter += " AND e.with_bare = ?"
                    arguments += [with]
                }
            }
            // Times follow the archive order, so each bound is one row: the newest message
            // before `start` (looked for from the newest end, where catching-up queries
            // start) and the oldest after `end`.
            if let start = query.start {
                filter += """
                     AND e.id > COALESCE((SELECT s.id FROM archive_entries s JOIN archive_bodies t ON t.id = s.id
                                          WHERE s.account_id = ? AND t.archived_at < ? ORDER BY s.id DESC LIMIT 1), -1)
                    """
                arguments += [accountID, Self.milliseconds(start)]
            }
            if let end = query.end {
                filter += """
                     AND e.id < COALESCE((SELECT s.id FROM archive_entries s JOIN archive_bodies t ON t.id = s.id
                                          WHERE s.account_id = ? AND t.archived_at > ? ORDER BY s.id LIMIT 1), 9223372036854775807)
                    """
                arguments += [accountID, Self.milliseconds(end)]
            }
            func position(of stanzaID: String) throws -> Int64 {
                guard
                    let position = try Int64.fetchOne(
                        db,
                        sql: """
                            SELECT b.id FROM archive_bodies b JOIN archive_entries e ON e.account_id = ? AND e.id = b.id
                            WHERE b.stanza_id = ? ORDER BY b.id LIMIT 1
                            """,
                        arguments: [accountID, stanzaID])
                else { throw StorageError.itemNotFound("archive id '\(stanzaID)'") }
                return position
            }
            if let afterID = query.afterID {
                filter += " AND e.id > ?"
                arguments += [try position(of: afterID)]
            }
            if let beforeID = query.beforeID {
                filter += " AND e.id < ?"
                arguments += [try position(of: beforeID)]
            }
            if let ids = query.ids {
                filter += " AND b.stanza_id IN (\(ids.isEmpty ? "NULL" : Array(repeating: "?", count: ids.count).joined(separator: ", ")))"
                arguments += StatementArguments(ids)
                readsBodies = true
            }
            let counted = readsBodies ? "archive_entries e JOIN archive_bodies b ON b.id = e.id" : "archive_entries e"
            let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(counted) WHERE \(filter)", arguments: arguments) ?? 0

            var paged = filter
            var pagedArguments = arguments
            if let after = query.after {
                paged += " AND e.id > ?"
                pagedArguments += [try position(of: after)]
            }
            let backwards = query.before != nil
            if let before = query.before, !before.isEmpty {
                paged += " AND e.id < ?"
                pagedArguments += [try position(of: before)]
            }
            let limit = max(query.max, 0)
            let columns =
                "e.id, b.stanza_id, b.origin_id, b.message_id, b.message_type, b.from_jid, b.to_jid, b.stanza, b.archived_at, b.retracted_at"
            var rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT \(columns) FROM archive_entries e JOIN archive_bodies b ON b.id = e.id
                    WHERE \(paged) ORDER BY e.id \(backwards ? "DESC" : "ASC") LIMIT ?
                    """,
                arguments: pagedArguments + [limit + 1])
            let complete = rows.count <= limit
            rows = Array(rows.prefix(limit))
            if backwards { rows.reverse() }
            let messages = rows.map { row in
                ArchivedMessage(
                    position: row[0], stanzaID: row[1], originID: row[2], messageID: row[3], messageType: row[4], from: row[5],
                    to: row[6], stanza: row[7], archivedAt: Self.date(milliseconds: row[8]),
                    retractedAt: (row[9] as Int64?).map(Self.date(milliseconds:)))
            }
            var firstIndex: Int?
            if let first = messages.first {
                firstIndex = try Int.fetchOne(
                    db, sql: "SELECT COUNT(*) FROM \(counted) WHERE \(filter) AND e.id < ?", arguments: arguments + [first.position])
            }
            return ArchivePage(messages: messages, complete: complete, count: count, firstIndex: firstIndex)
        }
    }

    public func recentOriginIDs(of user: String, sentAs bareJID: String, limit: Int) async throws -> [SentOriginID] {
        try await pool.read { db in
            guard let accountID = try Self.accountID(of: user, in: db) else { return [] }
            // Served by the partial index archive_entries_origin_id: no walk through messages
            // without an origin-id.
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT e.with_bare, b.origin_id FROM archive_entries e JOIN archive_bodies b ON b.id = e.id
                    WHERE e.account_id = ? AND e.has_origin_id IS NOT NULL AND b.from_bare = ? AND b.origin_id IS NOT NULL
                    ORDER BY e.id DESC LIMIT ?
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
            // body at or after `date`, found by walking from the oldest end through the rows
            // that go anyway. Each account's entries before it go (counted, as each is a
            // message in an archive), and with them their bodies (archive_entries_released).
            let bound =
                try Int64.fetchOne(
                    db,
                    sql: """
                        SELECT COALESCE(
                            (SELECT id FROM archive_bodies WHERE archived_at >= ? ORDER BY id LIMIT 1),
                            (SELECT MAX(id) + 1 FROM archive_bodies))
                        """,
                    arguments: [Self.milliseconds(date)]) ?? 0
            try db.execute(
                sql: "DELETE FROM archive_entries WHERE account_id IN (SELECT id FROM accounts) AND id < ?", arguments: [bound])
            let pruned = db.changesCount
            try db.execute(sql: "DELETE FROM archive_bodies WHERE id < ?", arguments: [bound])
            return pruned
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
        jid.utf8.firstIndex(of: UInt8(ascii: "/")).map { String(jid[..<$0]) } ?? jid
    }

    static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
    }

    static func date(milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}
