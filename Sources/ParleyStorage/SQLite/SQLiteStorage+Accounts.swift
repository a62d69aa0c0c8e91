import Foundation
import GRDB

extension SQLiteStorage: AccountStore {
    public func createAccount(username: String, keys: [StoredSCRAMKeys]) async throws {
        try validate(keys)
        let now = Date()
        try await pool.write { db in
            // Writes are IMMEDIATE transactions, so no other process can slip in between a
            // check and the insert; ON CONFLICT makes "taken" a row count, not an exception.
            try db.execute(
                sql: "INSERT INTO accounts (username, created_at) VALUES (?, ?) ON CONFLICT (username) DO NOTHING",
                arguments: [username, now])
            guard db.changesCount == 1 else { throw StorageError.accountExists(username: username) }
            try Self.insert(keys, accountID: db.lastInsertedRowID, in: db)
        }
    }

    /// Runs on every login: one query with cached statements (parsing the SQL each time
    /// cost more than the lookup itself).
    public func account(username: String) async throws -> AccountRecord? {
        try await quickReads.read { db in try Self.account(username: username, in: db) }
    }

    /// The same lookup, answered on a storage thread without a Swift task in between: what
    /// a SASL exchange on an event loop waits for.
    public func account(username: String, completion: @escaping @Sendable (Result<AccountRecord?, any Error>) -> Void) {
        quickReads.read({ db in try Self.account(username: username, in: db) }, completion: completion)
    }

    private static func account(username: String, in db: Database) throws -> AccountRecord? {
        let statement = try db.cachedStatement(
            sql: """
                SELECT a.id, a.created_at, k.hash_name, k.salt, k.iterations, k.stored_key, k.server_key
                FROM accounts a LEFT JOIN account_keys k ON k.account_id = a.id
                WHERE a.username = ? ORDER BY k.hash_name
                """)
        let rows = try Row.fetchAll(statement, arguments: [username])
        guard let first = rows.first else { return nil }
        let keys = rows.compactMap { key -> StoredSCRAMKeys? in
            guard let hashName: String = key["hash_name"] else { return nil }
            return StoredSCRAMKeys(
                hashName: hashName, salt: [UInt8](key["salt"] as Data),
                iterations: key["iterations"], storedKey: [UInt8](key["stored_key"] as Data),
                serverKey: [UInt8](key["server_key"] as Data))
        }
        return AccountRecord(username: username, keys: keys, createdAt: first["created_at"], id: first["id"])
    }

    public func updateKeys(username: String, keys: [StoredSCRAMKeys], origin: AccountChange.Origin) async throws {
        try validate(keys)
        let now = Date()
        try await pool.write { db in
            guard
                let accountID = try Int64.fetchOne(
                    db, sql: "SELECT id FROM accounts WHERE username = ?", arguments: [username])
            else { throw StorageError.accountNotFound(username: username) }
            try db.execute(sql: "DELETE FROM account_keys WHERE account_id = ?", arguments: [accountID])
            try Self.insert(keys, accountID: accountID, in: db)
            try Self.recordChange(.passwordChanged, of: username, accountID: accountID, origin: origin, at: now, in: db)
        }
    }

    @discardableResult
    public func deleteAccount(username: String, origin: AccountChange.Origin) async throws -> Bool {
        let now = Date()
        // Its roster goes with it.
        defer { rosterObservers.changed(username) }
        return try await pool.write { db in
            guard
                let accountID = try Int64.fetchOne(
                    db, sql: "SELECT id FROM accounts WHERE username = ?", arguments: [username])
            else { return false }
            // Keys (and later rosters, offline messages, …) go with it through ON DELETE CASCADE.
            try db.execute(sql: "DELETE FROM accounts WHERE id = ?", arguments: [accountID])
            try Self.recordChange(.deleted, of: username, accountID: accountID, origin: origin, at: now, in: db)
            return true
        }
    }

    public func usernames() async throws -> [String] {
        // BINARY collation: byte order of the UTF-8, the same everywhere.
        try await pool.read { db in
            try String.fetchAll(db, sql: "SELECT username FROM accounts ORDER BY username")
        }
    }

    public func accountCount() async throws -> Int {
        try await pool.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM accounts") ?? 0
        }
    }

    private func validate(_ keys: [StoredSCRAMKeys]) throws {
        guard !keys.isEmpty else {
            throw StorageError.invalidArgument("an account needs keys for at least one hash")
        }
        let hashNames = keys.map(\.hashName)
        guard Set(hashNames).count == hashNames.count else {
            throw StorageError.invalidArgument("more than one set of keys for one hash in \(hashNames)")
        }
        if let bad = keys.first(where: { $0.iterations <= 0 }) {
            throw StorageError.invalidArgument("\(bad.hashName) keys with \(bad.iterations) iterations")
        }
    }

    private static func insert(_ keys: [StoredSCRAMKeys], accountID: Int64, in db: Database) throws {
        for key in keys {
            try db.execute(
                sql: """
                    INSERT INTO account_keys (account_id, hash_name, salt, iterations, stored_key, server_key)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    accountID, key.hashName, Data(key.salt), key.iterations, Data(key.storedKey),
                    Data(key.serverKey),
                ])
        }
    }
}
