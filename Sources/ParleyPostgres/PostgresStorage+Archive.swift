import Foundation
import ParleyStorage
import PostgresNIO

/// The accounts' archives (XEP-0313). Kept in one file, apart from the other stores, as the
/// archive's schema and write path are the part most likely to change with the SQLite side.
extension PostgresStorage: ArchiveStore {
    /// A group commit of its own, running beside the offline messages' (`archiveWriter`).
    public func archive(_ entries: [ArchiveEntry], maxPerUser: Int?) async throws {
        guard !entries.isEmpty else { return }
        _ = try await archiveWriter.submit(user: "", .archive(entries: entries, maxPerUser: maxPerUser))
    }

    /// The archive's rows for `entries`, inside the caller's transaction, for accounts whose
    /// ids (locked) and preferences the caller looked up: the rows in one statement, the cut
    /// back to `maxPerUser` in one DELETE. Consecutive entries that
    /// are copies of one message for different owners (as `ArchiveModule` queues a message
    /// between two local accounts) share one body row (v11_archive_bodies); each owner gets
    /// its own entry, at the body's position.
    static func writeArchive(
        _ entries: [ArchiveEntry], maxPerUser: Int?, accounts: PostgresBatchRows.Accounts, _ connection: PostgresConnection,
        logger: Logger
    ) async throws {
        let accountIDs = accounts.ids
        let preferences = accounts.preferences
        var bodies: [PostgresBatchRows.ArchiveBody] = []
        var touched: Set<Int64> = []
        for run in entries.sharedBodyRuns() {
            let message = entries[run.lowerBound]
            let fromBare = bare(message.from)
            var body = PostgresBatchRows.ArchiveBody(entry: message, fromBare: fromBare, owners: [])
            for entry in entries[run] {
                guard let accountID = accountIDs[entry.owner] else { continue }
                if let target = entry.retracts {
                    // The message it retracts may be one of the rows not written yet. A shared
                    // body is tombstoned for every archive holding it, as the retraction's
                    // entries name them all.
                    try await PostgresBatchRows.insertArchive(bodies, connection, logger: logger)
                    bodies = []
                    try await connection.run(
                        """
                        UPDATE archive_bodies AS b SET stanza = NULL, retracted_at = \(Milliseconds.from(entry.archivedAt))
                        WHERE (b.stanza_id = \(target) OR b.origin_id = \(target)) AND b.from_bare = \(fromBare)
                            AND b.retracted_at IS NULL
                            AND EXISTS (SELECT 1 FROM archive_entries AS e WHERE e.account_id = \(accountID) AND e.id = b.id)
                        """, logger: logger)
                }
                guard
                    try await shouldArchive(
                        with: entry.with, preferences: preferences[accountID] ?? ArchivePreferences(), accountID: accountID,
                        connection, logger: logger)
                else { continue }
                body.owners.append((accountID, entry.with))
                touched.insert(accountID)
            }
            if !body.owners.isEmpty { bodies.append(body) }
        }
        try await PostgresBatchRows.insertArchive(bodies, connection, logger: logger)
        if let maxPerUser {
            try await PostgresBatchRows.trimArchives(of: touched, keeping: maxPerUser, connection, logger: logger)
        }
    }

    public func queryArchive(user: String, _ query: ArchiveQuery) async throws -> ArchivePage {
        let logger = logger
        return try await transaction { connection in
            guard let accountID = try await connection.accountID(of: user, logger: logger) else {
                return ArchivePage(messages: [], complete: true, count: 0, firstIndex: nil)
            }
            // `e` is the owner's entries, `b` their bodies; the counts join the bodies only
            // when a filter reads them, so a plain count stays within the owner's index.
            var filter = SQLFilter()
            var readsBodies = false
            filter.add("e.account_id = ", accountID)
            if let with = query.with {
                if query.withIsFull {
                    filter.add("(b.from_jid = ", with, " OR b.to_jid = ", with, ")")
                    readsBodies = true
                } else {
                    filter.add("e.with_bare = ", with)
                }
            }
            if let start = query.start {
                filter.add("b.archived_at >= ", Milliseconds.from(start))
                readsBodies = true
            }
            if let end = query.end {
                filter.add("b.archived_at <= ", Milliseconds.from(end))
                readsBodies = true
            }
            func position(of stanzaID: String) async throws -> Int64 {
                guard
                    let position = try await connection.value(
                        """
                        SELECT b.id FROM archive_bodies AS b JOIN archive_entries AS e ON e.account_id = \(accountID) AND e.id = b.id
                        WHERE b.stanza_id = \(stanzaID) ORDER BY b.id LIMIT 1
                        """,
                        as: Int64.self, logger: logger)
                else { throw StorageError.itemNotFound("archive id '\(stanzaID)'") }
                return position
            }
            if let afterID = query.afterID { filter.add("e.id > ", try await position(of: afterID)) }
            if let beforeID = query.beforeID { filter.add("e.id < ", try await position(of: beforeID)) }
            if let ids = query.ids {
                filter.add("b.stanza_id = ANY(", ids, ")")
                readsBodies = true
            }
            let counted = readsBodies ? "archive_entries AS e JOIN archive_bodies AS b ON b.id = e.id" : "archive_entries AS e"
            let count = try await connection.value(
                filter.query("SELECT COUNT(*) FROM \(counted) WHERE "), as: Int64.self, logger: logger) ?? 0

            var paged = filter
            if let after = query.after { paged.add("e.id > ", try await position(of: after)) }
            let backwards = query.before != nil
            if let before = query.before, !before.isEmpty { paged.add("e.id < ", try await position(of: before)) }
            let limit = max(query.max, 0)
            var rows = try await connection.rows(
                paged.query(
                    """
                    SELECT e.id, b.stanza_id, b.origin_id, b.message_id, b.message_type, b.from_jid, b.to_jid, b.stanza,
                           b.archived_at, b.retracted_at
                    FROM archive_entries AS e JOIN archive_bodies AS b ON b.id = e.id WHERE
                    """,
                    then: " ORDER BY e.id \(backwards ? "DESC" : "ASC") LIMIT \(limit + 1)"),
                logger: logger)
            let complete = rows.count <= limit
            rows = Array(rows.prefix(limit))
            if backwards { rows.reverse() }
            let messages = try rows.map { row in
                let (position, stanzaID, originID, messageID, messageType, from, to, stanza, archivedAt, retractedAt) = try row.decode(
                    (Int64, String, String?, String?, String?, String, String, String?, Int64, Int64?).self)
                return ArchivedMessage(
                    position: position, stanzaID: stanzaID, originID: originID, messageID: messageID, messageType: messageType,
                    from: from, to: to, stanza: stanza, archivedAt: Milliseconds.date(archivedAt),
                    retractedAt: retractedAt.map(Milliseconds.date))
            }
            var firstIndex: Int?
            if let first = messages.first {
                var before = filter
                before.add("e.id < ", first.position)
                firstIndex = Int(
                    try await connection.value(
                        before.query("SELECT COUNT(*) FROM \(counted) WHERE "), as: Int64.self, logger: logger) ?? 0)
            }
            return ArchivePage(messages: messages, complete: complete, count: Int(count), firstIndex: firstIndex)
        }
    }

    public func recentOriginIDs(of user: String, sentAs bareJID: String, limit: Int) async throws -> [SentOriginID] {
        let logger = logger
        return try await read { connection in
            guard let accountID = try await connection.accountID(of: user, logger: logger) else { return [] }
            // Served by the partial index archive_entries_origin_id: no walk through messages
            // without an origin-id.
            return try await connection.rows(
                """
                SELECT e.with_bare, b.origin_id FROM archive_entries AS e JOIN archive_bodies AS b ON b.id = e.id
                WHERE e.account_id = \(accountID) AND e.has_origin_id AND b.from_bare = \(bareJID) AND b.origin_id IS NOT NULL
                ORDER BY e.id DESC LIMIT \(Int64(max(limit, 0)))
                """, logger: logger
            ).map { row in
                let (to, originID) = try row.decode((String, String).self)
                return SentOriginID(to: to, originID: originID)
            }
        }
    }

    public func archivePreferences(of user: String) async throws -> ArchivePreferences {
        let logger = logger
        return try await read { connection in
            guard let accountID = try await connection.accountID(of: user, logger: logger) else { return ArchivePreferences() }
            return try await Self.archivePreferences(of: accountID, connection, logger: logger)
        }
    }

    public func setArchivePreferences(_ preferences: ArchivePreferences, of user: String) async throws {
        let logger = logger
        try await transaction { connection in
            let accountID = try await connection.existingAccountID(of: user, logger: logger)
            try await connection.run(
                """
                INSERT INTO archive_preferences (account_id, default_mode) VALUES (\(accountID), \(preferences.defaultMode.rawValue))
                ON CONFLICT (account_id) DO UPDATE SET default_mode = excluded.default_mode
                """, logger: logger)
            try await connection.run("DELETE FROM archive_preference_jids WHERE account_id = \(accountID)", logger: logger)
            // A JID in both lists is never archived: the stricter choice wins.
            for (jids, archive) in [(preferences.always, true), (preferences.never, false)] where !jids.isEmpty {
                try await connection.run(
                    """
                    INSERT INTO archive_preference_jids (account_id, jid, archive)
                    SELECT \(accountID), jid, \(archive) FROM unnest(\(jids)::text[]) AS jid
                    ON CONFLICT (account_id, jid) DO UPDATE SET archive = excluded.archive
                    """, logger: logger)
            }
        }
    }

    @discardableResult
    public func pruneArchive(before date: Date) async throws -> Int {
        let logger = logger
        let cutoff = Milliseconds.from(date)
        return try await transaction { connection in
            // Each account's entries of the bodies older than the cutoff (counted, as each is
            // a message in an archive); their bodies go with them (archive_entries_released).
            Int(
                try await connection.value(
                    """
                    WITH pruned AS (
                        DELETE FROM archive_entries AS e USING archive_bodies AS b
                        WHERE b.id = e.id AND b.archived_at < \(cutoff) RETURNING 1)
                    SELECT COUNT(*) FROM pruned
                    """, as: Int64.self, logger: logger) ?? 0)
        }
    }

    // MARK: Helpers

    static func archivePreferences(of accountID: Int64, _ connection: PostgresConnection, logger: Logger) async throws -> ArchivePreferences {
        let mode = try await connection.value(
            "SELECT default_mode FROM archive_preferences WHERE account_id = \(accountID)", as: String.self, logger: logger)
        var preferences = ArchivePreferences(defaultMode: mode.flatMap(ArchivePreferences.Default.init(rawValue:)) ?? .always)
        for row in try await connection.rows(
            "SELECT jid, archive FROM archive_preference_jids WHERE account_id = \(accountID) ORDER BY jid", logger: logger)
        {
            let (jid, archive) = try row.decode((String, Bool).self)
            if archive { preferences.always.append(jid) } else { preferences.never.append(jid) }
        }
        return preferences
    }

    /// XEP-0313 §6: the lists decide first, then the default (`roster`: the contact is in
    /// the owner's roster).
    static func shouldArchive(
        with contact: String, preferences: ArchivePreferences, accountID: Int64, _ connection: PostgresConnection, logger: Logger
    ) async throws -> Bool {
        if preferences.never.contains(contact) { return false }
        if preferences.always.contains(contact) { return true }
        switch preferences.defaultMode {
        case .always: return true
        case .never: return false
        case .roster:
            return try await connection.value(
                "SELECT EXISTS (SELECT 1 FROM roster_items WHERE account_id = \(accountID) AND contact = \(contact))",
                as: Bool.self, logger: logger) ?? false
        }
    }

    static func bare(_ jid: String) -> String {
        jid.firstIndex(of: "/").map { String(jid[..<$0]) } ?? jid
    }
}
