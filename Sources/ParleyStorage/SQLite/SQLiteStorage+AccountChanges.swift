import Foundation
import GRDB

extension SQLiteStorage: AccountChangeFeed {
    public func latestChangeID() async throws -> Int64 {
        // sqlite_sequence remembers the highest id ever handed out, even once its row has
        // been pruned; MAX(id) would go back to 0.
        try await pool.read { db in
            try Int64.fetchOne(
                db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'account_changes'") ?? 0
        }
    }

    public func changes(after id: Int64) async throws -> [AccountChange] {
        // SQLite has one writer at a time and ids are assigned inside the write transaction,
        // so a committed id is never followed by the commit of a smaller one: `id > cursor`
        // cannot skip a change.
        try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT id, username, account_id, kind, origin, at FROM account_changes WHERE id > ? ORDER BY id",
                arguments: [id]
            ).map { row in
                let kindName: String = row["kind"]
                let originName: String = row["origin"]
                // The CHECK constraints admit only these; anything else is a corrupt file.
                guard let kind = AccountChange.Kind(rawValue: kindName),
                    let origin = AccountChange.Origin(rawValue: originName)
                else {
                    throw StorageError.unusableDatabase(
                        "account_changes row \(row["id"] as Int64) has kind '\(kindName)', origin '\(originName)'")
                }
                return AccountChange(
                    id: row["id"], username: row["username"], accountID: row["account_id"], kind: kind, origin: origin,
                    at: row["at"])
            }
        }
    }

    @discardableResult
    public func pruneChanges(before date: Date) async throws -> Int {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM account_changes WHERE at < ?", arguments: [date])
            return db.changesCount
        }
    }

    /// Written inside the transaction that makes the change, so a reader sees both or neither.
    static func recordChange(
        _ kind: AccountChange.Kind, of username: String, accountID: Int64, origin: AccountChange.Origin, at date: Date,
        in db: Database
    ) throws {
        try db.execute(
            sql: "INSERT INTO account_changes (username, account_id, kind, origin, at) VALUES (?, ?, ?, ?, ?)",
            arguments: [username, accountID, kind.rawValue, origin.rawValue, date])
    }
}
