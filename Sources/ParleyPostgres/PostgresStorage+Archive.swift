import Foundation
import ParleyStorage
import PostgresNIO

/// The accounts' archives (XEP-0313). Kept in one file, apart from the other stores, as the
/// archive's schema and write path are the part most likely to change with the SQLite side.
extension PostgresStorage: ArchiveStore {
    /// Joins the offline messages' group commit, as on SQLite: a message to an offline account
    /// is stored there and archived for both parties in one transaction.
    public func archive(_ entries: [ArchiveEntry], maxPerUser: Int?) async throws {
        guard !entries.isEmpty else { return }
        _ = try await offlineWriter.submit(user: "", .archive(entries: entries, maxPerUser: maxPerUser))
    }

    /// The archive's rows for `entries`, inside the caller's transaction, for accounts whose
    /// ids (locked) the caller looked up: the preferences of all of them in one read, the rows
    /// in one INSERT, the cut back to `maxPerUser` in one DELETE.
    static func writeArchive(
        _ entries: [ArchiveEntry], maxPerUser: Int?, accountIDs: [String: Int64], _ connection: PostgresConnection, logger: Logger
    ) async throws {
        let owners = Set(entries.compactMap { accountIDs[$0.owner] })
        let preferences = try await PostgresBatchRows.archivePreferences(of: owners, connection, logger: logger)
        var rows: [PostgresBatchRows.ArchiveRow] = []
        var touched: Set<Int64> = []
        for entry in entries {
            guard let accountID = accountIDs[entry.owner] else { continue }
            let fromBare = bare(entry.from)
            if let target = entry.retracts {
                // The message it retracts may be one of the rows not written yet.
                try await PostgresBatchRows.insertArchive(rows, connection, logger: logger)
                rows = []
                try await connection.run(
                    """
                    UPDATE archive_messages SET stanza = NULL, retracted_at = \(Milliseconds.from(entry.archivedAt))
                    WHERE account_id = \(accountID) AND (stanza_id = \(target) OR origin_id = \(target))
                        AND from_bare = \(fromBare) AND retracted_at IS NULL
                    """, logger: logger)
            }
            guard
                try await shouldArchive(
                    with: entry.with, preferences: preferences[accountID] ?? ArchivePreferences(), accountID: accountID,
                    connection, logger: logger)
            else { continue }
            rows.append(PostgresBatchRows.ArchiveRow(accountID: accountID, entry: entry, fromBare: fromBare))
            touched.insert(accountID)
        }
        try await PostgresBatchRows.insertArchive(rows, connection, logger: logger)
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
            var filter = SQLFilter()
            filter.add("account_id = ", accountID)
            if let with = query.with {
                if query.withIsFull {
                    filter.add("(from_jid = ", with, " OR to_jid = ", with, ")")
                } else {
                    filter.add("with_bare = ", with)
                }
            }
            if let start = query.start { filter.add("archived_at >= ", Milliseconds.from(start)) }
            if let end = query.end { filter.add("archived_at <= ", Milliseconds.from(end)) }
            func position(of stanzaID: String) async throws -> Int64 {
                guard
                    let position = try await connection.value(
                        "SELECT id FROM archive_messages WHERE account_id = \(accountID) AND stanza_id = \(stanzaID) ORDER BY id LIMIT 1",
                        as: Int64.self, logger: logger)
                else { throw StorageError.itemNotFound("archive id '\(stanzaID)'") }
                return position
            }
            if let afterID = query.afterID { filter.add("id > ", try await position(of: afterID)) }
            if let beforeID = query.beforeID { filter.add("id < ", try await position(of: beforeID)) }
            if let ids = query.ids { filter.add("stanza_id = ANY(", ids, ")") }
            let count = try await connection.value(
                filter.query("SELECT COUNT(*) FROM archive_messages WHERE "), as: Int64.self, logger: logger) ?? 0

            var paged = filter
            if let after = query.after { paged.add("id > ", try await position(of: after)) }
            let backwards = query.before != nil
            if let before = query.before, !before.isEmpty { paged.add("id < ", try await position(of: before)) }
            let limit = max(query.max, 0)
            var rows = try await connection.rows(
                paged.query(
                    """
                    SELECT id, stanza_id, origin_id, message_id, message_type, from_jid, to_jid, stanza, archived_at, retracted_at
                    FROM archive_messages WHERE
                    """,
                    then: " ORDER BY id \(backwards ? "DESC" : "ASC") LIMIT \(limit + 1)"),
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
                before.add("id < ", first.position)
                firstIndex = Int(
                    try await connection.value(
                        before.query("SELECT COUNT(*) FROM archive_messages WHERE "), as: Int64.self, logger: logger) ?? 0)
            }
            return ArchivePage(messages: messages, complete: complete, count: Int(count), firstIndex: firstIndex)
        }
    }

    public func recentOriginIDs(of user: String, sentAs bareJID: String, limit: Int) async throws -> [SentOriginID] {
        let logger = logger
        return try await read { connection in
            guard let accountID = try await connection.accountID(of: user, logger: logger) else { return [] }
            // Served by the partial index archive_messages_sent: no scan of received messages.
            return try await connection.rows(
                """
                SELECT with_bare, origin_id FROM archive_messages
                WHERE account_id = \(accountID) AND from_bare = \(bareJID) AND origin_id IS NOT NULL
                ORDER BY id DESC LIMIT \(Int64(max(limit, 0)))
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
            Int(
                try await connection.value(
                    """
                    WITH pruned AS (DELETE FROM archive_messages WHERE archived_at < \(cutoff) RETURNING 1)
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
