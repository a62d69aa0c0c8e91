import Foundation
import GRDB
import ParleyStorage
import PostgresNIO

/// `parleyd storage copy --from-sqlite DIR`: copies every table of a SQLite data directory's
/// database into an empty PostgreSQL database, keeping ids (offline message ids, archive
/// positions, the change feed's cursor), in one transaction: all of it or nothing.
///
/// Column by column, because the two schemas store some values differently: SQLite's dates
/// written by GRDB as text become milliseconds, its 0/1 integers become booleans.
public enum SQLiteImport {
    enum Kind { case integer, text, blob, boolean, date }

    /// Parent tables before the tables referencing them. `key` is the integer column the
    /// rows are read in order of, in pages; tables without one are small and read at once.
    static let tables: [(name: String, key: String?, columns: [(String, Kind)])] = [
        ("accounts", "id", [("id", .integer), ("username", .text), ("created_at", .date)]),
        ("account_keys", nil, [
            ("account_id", .integer), ("hash_name", .text), ("salt", .blob), ("iterations", .integer), ("stored_key", .blob),
            ("server_key", .blob),
        ]),
        ("account_changes", "id", [
            ("id", .integer), ("username", .text), ("account_id", .integer), ("kind", .text), ("origin", .text), ("at", .date),
        ]),
        ("roster_versions", nil, [("account_id", .integer), ("version", .integer), ("pruned_through", .integer)]),
        ("roster_items", nil, [
            ("account_id", .integer), ("contact", .text), ("name", .text), ("groups", .text), ("subscription", .text),
            ("ask_subscribe", .boolean), ("approved", .boolean), ("version", .integer),
        ]),
        ("roster_tombstones", nil, [("account_id", .integer), ("contact", .text), ("version", .integer)]),
        ("roster_pending", "id", [
            ("id", .integer), ("account_id", .integer), ("contact", .text), ("stanza", .text), ("received_at", .date),
        ]),
        ("offline_messages", "id", [("id", .integer), ("account_id", .integer), ("stanza", .text), ("stored_at", .date)]),
        ("blocked_jids", nil, [("account_id", .integer), ("jid", .text)]),
        ("archive_bodies", "id", [
            ("id", .integer), ("owners", .integer), ("from_bare", .text), ("from_jid", .text), ("to_jid", .text),
            ("stanza_id", .text), ("origin_id", .text), ("message_id", .text), ("message_type", .text), ("stanza", .text),
            ("archived_at", .integer), ("retracted_at", .integer),
        ]),
        ("archive_entries", nil, [("account_id", .integer), ("id", .integer), ("with_bare", .text), ("has_origin_id", .boolean)]),
        ("archive_preferences", nil, [("account_id", .integer), ("default_mode", .text)]),
        ("archive_preference_jids", nil, [("account_id", .integer), ("jid", .text), ("archive", .boolean)]),
        ("pep_nodes", "id", [("id", .integer), ("account_id", .integer), ("node", .text), ("configuration", .text)]),
        ("pep_items", "seq", [
            ("seq", .integer), ("node_id", .integer), ("item_id", .text), ("payload", .text), ("publisher", .text),
            ("published_at", .integer),
        ]),
        ("vcards", nil, [("account_id", .integer), ("vcard", .text), ("photo_hash", .text), ("updated_at", .integer)]),
        ("private_xml", nil, [("account_id", .integer), ("namespace", .text), ("name", .text), ("xml", .text)]),
        ("last_activity", nil, [("account_id", .integer), ("logged_out_at", .integer), ("status", .text)]),
        ("muc_rooms", nil, [
            ("service", .text), ("name", .text), ("title", .text), ("description", .text), ("is_public", .boolean), ("whois", .text),
            ("occupants_change_subject", .boolean), ("members_only", .boolean), ("moderated", .boolean), ("archiving", .boolean),
            ("allow_pm", .text), ("max_occupants", .integer), ("members_may_invite", .boolean), ("password", .text), ("subject", .text), ("subject_from", .text), ("occupant_id_key", .blob),
        ]),
        ("muc_affiliations", nil, [
            ("service", .text), ("room", .text), ("jid", .text), ("account_id", .integer), ("affiliation", .text), ("nick", .text),
        ]),
        ("muc_vcards", nil, [("service", .text), ("room", .text), ("vcard", .text), ("photo_hash", .text)]),
        ("muc_archive", "id", [
            ("id", .integer), ("service", .text), ("room", .text), ("stanza_id", .text), ("nick", .text), ("account_id", .integer),
            ("sender_jid", .text), ("stanza", .text), ("archived_at", .integer),
        ]),
        ("uploads", nil, [
            ("id", .text), ("account_id", .integer), ("filename", .text), ("size", .integer), ("content_type", .text),
            ("created_at", .integer), ("state", .text),
        ]),
    ]

    /// Copies the database at `sqlitePath` (brought up to date first, as the server would)
    /// into `storage`, whose database must hold no account yet. Returns the rows copied per table.
    public static func copy(fromSQLite sqlitePath: String, to storage: PostgresStorage) async throws -> [(table: String, rows: Int)] {
        guard FileManager.default.fileExists(atPath: sqlitePath) else {
            throw StorageError.unusableDatabase("no SQLite database at \(sqlitePath)")
        }
        _ = try SQLiteStorage(path: sqlitePath)  // migrates it to the schema these columns describe
        var configuration = Configuration()
        configuration.readonly = true
        let source = try DatabaseQueue(path: sqlitePath, configuration: configuration)
        let sequences = try await source.read { db in
            Dictionary(
                try Row.fetchAll(db, sql: "SELECT name, seq FROM sqlite_sequence").map { ($0["name"] as String, $0["seq"] as Int64) },
                uniquingKeysWith: max)
        }
        let logger = storage.logger
        return try await storage.transaction { connection in
            let accounts = try await connection.value("SELECT COUNT(*) FROM accounts", as: Int64.self, logger: logger) ?? 0
            guard accounts == 0 else {
                throw StorageError.invalidArgument("the PostgreSQL database already has \(accounts) accounts; copy into an empty one")
            }
            var copied: [(table: String, rows: Int)] = []
            for table in tables {
                if table.name == "archive_entries" {
                    copied.append((table.name, try await copyArchiveEntries(from: source, connection, logger: logger)))
                    continue
                }
                var count = 0
                var after = Int64.min
                while true {
                    let cursor = after
                    let page = try await source.read { db in try readPage(of: table, after: cursor, in: db) }
                    try await insert(page, into: table, connection, logger: logger)
                    count += page.count
                    guard table.key != nil, page.count == pageSize, case .integer(let last)? = page.last?.first, let last
                    else { break }
                    after = last
                }
                if let key = table.key {
                    // Ids go on from the highest ever handed out, as SQLite's AUTOINCREMENT would.
                    let next = max(sequences[table.name] ?? 0, 1)
                    try await connection.run(
                        """
                        SELECT setval(pg_get_serial_sequence(\(table.name), \(key)),
                            GREATEST(\(next), (SELECT COALESCE(MAX(\(unescaped: key)), 1) FROM \(unescaped: table.name))))
                        """, logger: logger)
                }
                copied.append((table.name, count))
            }
            return copied
        }
    }

    static let pageSize = 1000

    /// The archive's entries (one per archive holding a message, at its body's position, as
    /// on SQLite since its v20_perf_archive): many, so read in pages, in the order of their
    /// key (account, position).
    private static func copyArchiveEntries(from source: DatabaseQueue, _ connection: PostgresConnection, logger: Logger) async throws -> Int {
        guard let table = tables.first(where: { $0.name == "archive_entries" }) else { return 0 }
        var count = 0
        var after: (account: Int64, id: Int64) = (Int64.min, Int64.min)
        while true {
            let cursor = after
            let page = try await source.read { db in
                try Row.fetchAll(
                    db,
                    sql: """
                        SELECT account_id, id, with_bare, has_origin_id FROM archive_entries
                        WHERE (account_id, id) > (?, ?) ORDER BY account_id, id LIMIT \(pageSize)
                        """, arguments: [cursor.account, cursor.id]
                ).map { row -> [Value] in
                    [.integer(row[0]), .integer(row[1]), .text(row[2]), .boolean((row[3] as Int64?).map { $0 != 0 })]
                }
            }
            try await insert(page, into: table, connection, logger: logger)
            count += page.count
            guard page.count == pageSize, case .integer(let account)? = page.last?[0], case .integer(let id)? = page.last?[1],
                let account, let id
            else { break }
            after = (account, id)
        }
        return count
    }

    enum Value: Sendable {
        case integer(Int64?), text(String?), blob(Data?), boolean(Bool?)
    }

    private static func readPage(of table: (name: String, key: String?, columns: [(String, Kind)]), after: Int64, in db: Database) throws
        -> [[Value]]
    {
        let names = table.columns.map(\.0).joined(separator: ", ")
        let rows: [Row]
        if let key = table.key {
            rows = try Row.fetchAll(
                db, sql: "SELECT \(names) FROM \(table.name) WHERE \(key) > ? ORDER BY \(key) LIMIT \(pageSize)", arguments: [after])
        } else {
            rows = try Row.fetchAll(db, sql: "SELECT \(names) FROM \(table.name)")
        }
        return rows.map { row in
            table.columns.enumerated().map { index, column -> Value in
                switch column.1 {
                case .integer: .integer(row[index])
                case .text: .text(row[index])
                case .blob: .blob(row[index])
                case .boolean: .boolean(row[index])
                case .date: .integer((row[index] as Date?).map { Int64(($0.timeIntervalSince1970 * 1000).rounded(.down)) })
                }
            }
        }
    }

    /// Rows many at a time: one statement per page, well under the 65535 parameters one may bind.
    private static func insert(
        _ rows: [[Value]], into table: (name: String, key: String?, columns: [(String, Kind)]), _ connection: PostgresConnection,
        logger: Logger
    ) async throws {
        let perStatement = max(1, 60_000 / table.columns.count)
        for start in stride(from: 0, to: rows.count, by: perStatement) {
            var bindings = PostgresBindings()
            var tuples: [String] = []
            for row in rows[start..<min(start + perStatement, rows.count)] {
                var placeholders: [String] = []
                for value in row {
                    switch value {
                    case .integer(let value): bindings.append(value)
                    case .text(let value): bindings.append(value)
                    case .blob(let value): try bindings.append(value)
                    case .boolean(let value): bindings.append(value)
                    }
                    placeholders.append("$\(bindings.count)")
                }
                tuples.append("(" + placeholders.joined(separator: ", ") + ")")
            }
            let identity = table.key != nil ? " OVERRIDING SYSTEM VALUE" : ""
            try await connection.run(
                PostgresQuery(
                    unsafeSQL: "INSERT INTO \(table.name) (\(table.columns.map(\.0).joined(separator: ", ")))\(identity) VALUES "
                        + tuples.joined(separator: ", "),
                    binds: bindings), logger: logger)
        }
    }
}
