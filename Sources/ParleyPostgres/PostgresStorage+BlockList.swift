import ParleyStorage
import PostgresNIO

extension PostgresStorage: BlockListStore {
    public func blockList(of user: String) async throws -> [String] {
        let logger = logger
        // COLLATE "C": byte order of the UTF-8.
        return try await read { connection in
            try await connection.rows(
                """
                SELECT jid FROM blocked_jids JOIN accounts ON accounts.id = blocked_jids.account_id
                WHERE accounts.username = \(user) ORDER BY jid
                """, logger: logger
            ).map { try $0.decode(String.self) }
        }
    }

    public func allBlockLists() async throws -> [String: [String]] {
        let logger = logger
        // COLLATE "C" (the columns'): byte order of the UTF-8, as blockList(of:).
        let rows = try await read { connection in
            try await connection.rows(
                """
                SELECT accounts.username, blocked_jids.jid FROM blocked_jids
                JOIN accounts ON accounts.id = blocked_jids.account_id
                ORDER BY accounts.username, blocked_jids.jid
                """, logger: logger)
        }
        var lists: [String: [String]] = [:]
        for row in rows {
            let (username, jid) = try row.decode((String, String).self)
            lists[username, default: []].append(jid)
        }
        return lists
    }

    public func block(user: String, jids: [String]) async throws {
        let logger = logger
        try await transaction { connection in
            let accountID = try await connection.existingAccountID(of: user, logger: logger)
            guard !jids.isEmpty else { return }
            try await connection.run(
                """
                INSERT INTO blocked_jids (account_id, jid) SELECT \(accountID), unnest(\(jids)::text[])
                ON CONFLICT DO NOTHING
                """, logger: logger)
        }
    }

    public func unblock(user: String, jids: [String]) async throws {
        let logger = logger
        try await transaction { connection in
            let accountID = try await connection.existingAccountID(of: user, logger: logger)
            if jids.isEmpty {
                try await connection.run("DELETE FROM blocked_jids WHERE account_id = \(accountID)", logger: logger)
            } else {
                try await connection.run(
                    "DELETE FROM blocked_jids WHERE account_id = \(accountID) AND jid = ANY(\(jids))", logger: logger)
            }
        }
    }
}
