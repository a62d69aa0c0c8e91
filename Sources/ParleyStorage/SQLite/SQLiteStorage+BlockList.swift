import Foundation
import GRDB

extension SQLiteStorage: BlockListStore {
    public func blockList(of user: String) async throws -> [String] {
        try await pool.read { db in
            guard let accountID = try Self.accountID(of: user, in: db) else { return [] }
            // BINARY collation: byte order of the UTF-8.
            return try String.fetchAll(
                db, sql: "SELECT jid FROM blocked_jids WHERE account_id = ? ORDER BY jid", arguments: [accountID])
        }
    }

    public func allBlockLists() async throws -> [String: [String]] {
        try await pool.read { db in
            var lists: [String: [String]] = [:]
            let rows = try Row.fetchCursor(
                db,
                sql: """
                    SELECT a.username, b.jid FROM blocked_jids b JOIN accounts a ON a.id = b.account_id
                    ORDER BY a.username, b.jid
                    """)
            while let row = try rows.next() {
                lists[row[0] as String, default: []].append(row[1])
            }
            return lists
        }
    }

    public func block(user: String, jids: [String]) async throws {
        try await pool.write { db in
            let accountID = try Self.existingAccountID(of: user, in: db)
            let insert = try db.cachedStatement(
                sql: "INSERT INTO blocked_jids (account_id, jid) VALUES (?, ?) ON CONFLICT DO NOTHING")
            for jid in jids {
                try insert.execute(arguments: [accountID, jid])
            }
        }
    }

    public func unblock(user: String, jids: [String]) async throws {
        try await pool.write { db in
            let accountID = try Self.existingAccountID(of: user, in: db)
            if jids.isEmpty {
                try db.execute(sql: "DELETE FROM blocked_jids WHERE account_id = ?", arguments: [accountID])
                return
            }
            let delete = try db.cachedStatement(sql: "DELETE FROM blocked_jids WHERE account_id = ? AND jid = ?")
            for jid in jids {
                try delete.execute(arguments: [accountID, jid])
            }
        }
    }
}
