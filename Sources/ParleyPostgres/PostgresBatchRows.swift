import Foundation
import ParleyStorage
import PostgresNIO

/// The group commit's statements for many rows at once. A batch of thousands of messages used
/// to cost thousands of round trips to the server (an account look-up, the preferences and an
/// INSERT per row); each of these is one round trip per batch, whatever the batch holds, and
/// the INSERTs take their rows as arrays (`unnest`), so their text is the same for every batch.
enum PostgresBatchRows {
    /// The accounts a batch names: their ids, and their archive preferences (absent rows:
    /// the defaults), for every account, whether or not it has archive entries in the batch,
    /// as a second query for the preferences cost more than reading a few that go unused.
    struct Accounts {
        var ids: [String: Int64] = [:]
        var preferences: [Int64: ArchivePreferences] = [:]
    }

    /// The ids of `usernames`' accounts, locked against deletion until the transaction ends
    /// (`FOR KEY SHARE`, as `accountID(of:lock:)`), with their archive preferences, in one
    /// round trip; the missing ones are absent. Locked in name order, so two writers never
    /// wait on each other crosswise.
    static func accounts(of usernames: Set<String>, _ connection: PostgresConnection, logger: Logger) async throws -> Accounts {
        guard !usernames.isEmpty else { return Accounts() }
        var accounts = Accounts()
        let names = usernames.sorted()
        for row in try await connection.rows(
            """
            SELECT a.username, a.id, p.default_mode,
                   ARRAY(SELECT jid FROM archive_preference_jids WHERE account_id = a.id AND archive ORDER BY jid),
                   ARRAY(SELECT jid FROM archive_preference_jids WHERE account_id = a.id AND NOT archive ORDER BY jid)
            FROM accounts AS a LEFT JOIN archive_preferences AS p ON p.account_id = a.id
            WHERE a.username = ANY(\(names)) ORDER BY a.username FOR KEY SHARE OF a
            """, logger: logger)
        {
            let (name, id, mode, always, never) = try row.decode((String, Int64, String?, [String], [String]).self)
            accounts.ids[name] = id
            var preferences = ArchivePreferences(defaultMode: mode.flatMap(ArchivePreferences.Default.init(rawValue:)) ?? .always)
            preferences.always = always
            preferences.never = never
            accounts.preferences[id] = preferences
        }
        return accounts
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

    /// Inserts offline messages in the given order and returns their ids in that order: one
    /// statement of fixed text for any number of rows (arrays, not a VALUES list per row
    /// count, which PostgreSQL had to parse and plan anew each time). The rows are inserted
    /// in the arrays' order, so the identity's values grow along it.
    static func insertOffline(
        _ rows: [(accountID: Int64, stanza: String)], storedAt: Int64, _ connection: PostgresConnection, logger: Logger
    ) async throws -> [Int64] {
        var ids = try await connection.rows(
            """
            INSERT INTO offline_messages (account_id, stanza, stored_at)
            SELECT account_id, stanza, \(storedAt)
            FROM unnest(\(rows.map(\.accountID))::bigint[], \(rows.map(\.stanza))::text[]) WITH ORDINALITY AS row(account_id, stanza, n)
            ORDER BY n
            RETURNING id
            """, logger: logger
        ).map { try $0.decode(Int64.self) }
        guard ids.count == rows.count else {
            throw StorageError.unusableDatabase("an offline INSERT returned \(ids.count) ids for \(rows.count) rows")
        }
        ids.sort()
        return ids
    }

    /// One message for the archive, as `writeArchive` decided to keep it: one body, and an
    /// entry for each archive (account, other party) that holds it.
    struct ArchiveBody {
        var entry: ArchiveEntry
        var fromBare: String
        var owners: [(accountID: Int64, with: String)]
    }

    /// The bodies and their entries in one statement of fixed text, whatever their number:
    /// the bodies from arrays, in order (their ids grow along it), then each entry joined to
    /// its body by that order. An absent optional column is marked in `present` (1 origin-id,
    /// 2 message id, 4 type), as postgres-nio binds no arrays of optionals.
    static func insertArchive(_ bodies: [ArchiveBody], _ connection: PostgresConnection, logger: Logger) async throws {
        guard !bodies.isEmpty else { return }
        var owners: [Int64] = [], fromBare: [String] = [], from: [String] = [], to: [String] = [], stanzaID: [String] = []
        var originID: [String] = [], messageID: [String] = [], messageType: [String] = [], present: [Int64] = []
        var stanza: [String] = [], archivedAt: [Int64] = []
        var entryAccount: [Int64] = [], entryBody: [Int64] = [], entryWith: [String] = [], entryOrigin: [Bool] = []
        for (index, body) in bodies.enumerated() {
            let entry = body.entry
            owners.append(Int64(body.owners.count))
            fromBare.append(body.fromBare)
            from.append(entry.from)
            to.append(entry.to)
            stanzaID.append(entry.stanzaID)
            originID.append(entry.originID ?? "")
            messageID.append(entry.messageID ?? "")
            messageType.append(entry.messageType ?? "")
            present.append((entry.originID != nil ? 1 : 0) | (entry.messageID != nil ? 2 : 0) | (entry.messageType != nil ? 4 : 0))
            stanza.append(entry.stanza)
            archivedAt.append(Milliseconds.from(entry.archivedAt))
            for owner in body.owners {
                entryAccount.append(owner.accountID)
                entryBody.append(Int64(index + 1))
                entryWith.append(owner.with)
                entryOrigin.append(entry.originID != nil)
            }
        }
        try await connection.run(
            """
            WITH body AS (
                INSERT INTO archive_bodies
                    (owners, from_bare, from_jid, to_jid, stanza_id, origin_id, message_id, message_type, stanza, archived_at)
                SELECT owners, from_bare, from_jid, to_jid, stanza_id,
                       CASE WHEN present & 1 <> 0 THEN origin_id END, CASE WHEN present & 2 <> 0 THEN message_id END,
                       CASE WHEN present & 4 <> 0 THEN message_type END, stanza, archived_at
                FROM unnest(
                    \(owners)::bigint[], \(fromBare)::text[], \(from)::text[], \(to)::text[], \(stanzaID)::text[],
                    \(originID)::text[], \(messageID)::text[], \(messageType)::text[], \(present)::bigint[], \(stanza)::text[],
                    \(archivedAt)::bigint[]
                ) WITH ORDINALITY AS row(
                    owners, from_bare, from_jid, to_jid, stanza_id, origin_id, message_id, message_type, present, stanza,
                    archived_at, n)
                ORDER BY n
                RETURNING id
            )
            INSERT INTO archive_entries (account_id, id, with_bare, has_origin_id)
            SELECT entry.account_id, numbered.id, entry.with_bare, CASE WHEN entry.has_origin_id THEN true END
            FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM body) AS numbered
            JOIN unnest(\(entryAccount)::bigint[], \(entryBody)::bigint[], \(entryWith)::text[], \(entryOrigin)::boolean[])
                AS entry(account_id, body, with_bare, has_origin_id) ON entry.body = numbered.n
            """, logger: logger)
    }

    /// Cuts every account of `accountIDs` back to its newest `keeping` entries, in one
    /// statement; the bodies no archive holds any more go with them (the
    /// archive_entries_released trigger).
    static func trimArchives(of accountIDs: Set<Int64>, keeping: Int, _ connection: PostgresConnection, logger: Logger) async throws {
        guard !accountIDs.isEmpty else { return }
        let offset = Int64(max(keeping, 0))
        try await connection.run(
            """
            DELETE FROM archive_entries AS doomed USING (
                SELECT account.id AS account_id, (
                    SELECT id FROM archive_entries WHERE account_id = account.id ORDER BY id DESC LIMIT 1 OFFSET \(offset)
                ) AS last_cut
                FROM unnest(\(Array(accountIDs))::bigint[]) AS account(id)
            ) AS cut
            WHERE doomed.account_id = cut.account_id AND doomed.id <= cut.last_cut
            """, logger: logger)
    }
}
