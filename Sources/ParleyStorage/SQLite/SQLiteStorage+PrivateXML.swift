import GRDB

extension SQLiteStorage: PrivateXMLStore {
    public func privateXML(of user: String, _ keys: [(name: String, namespace: String)]) async throws -> [String?] {
        try await pool.read { db in
            guard let accountID = try Self.accountID(of: user, in: db) else { return keys.map { _ in nil } }
            let select = try db.cachedStatement(
                sql: "SELECT xml FROM private_xml WHERE account_id = ? AND namespace = ? AND name = ?")
            return try keys.map { key in
                try String.fetchOne(select, arguments: [accountID, key.namespace, key.name])
            }
        }
    }

    public func setPrivateXML(_ elements: [PrivateXMLElement], for user: String, maxElements: Int) async throws -> Bool {
        do {
            try await write(elements, for: user, maxElements: maxElements)
            return true
        } catch is PrivateXMLLimitReached {
            return false
        }
    }

    private func write(_ elements: [PrivateXMLElement], for user: String, maxElements: Int) async throws {
        try await pool.write { db in
            let accountID = try Self.existingAccountID(of: user, in: db)
            let upsert = try db.cachedStatement(
                sql: """
                    INSERT INTO private_xml (account_id, namespace, name, xml) VALUES (?, ?, ?, ?)
                    ON CONFLICT (account_id, namespace, name) DO UPDATE SET xml = excluded.xml
                    """)
            let delete = try db.cachedStatement(
                sql: "DELETE FROM private_xml WHERE account_id = ? AND namespace = ? AND name = ?")
            for element in elements {
                if let xml = element.xml {
                    try upsert.execute(arguments: [accountID, element.namespace, element.name, xml])
                } else {
                    try delete.execute(arguments: [accountID, element.namespace, element.name])
                }
            }
            // Counted after the writes, inside the transaction: replacing an element never
            // trips the limit, and a refused write leaves nothing behind.
            let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM private_xml WHERE account_id = ?", arguments: [accountID]) ?? 0
            if count > maxElements { throw PrivateXMLLimitReached() }
        }
    }
}

/// Rolls the transaction back; never leaves this file.
private struct PrivateXMLLimitReached: Error {}
