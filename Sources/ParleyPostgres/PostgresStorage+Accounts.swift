import Foundation
import ParleyStorage
import PostgresNIO

extension PostgresStorage: AccountStore {
    public func createAccount(username: String, keys: [StoredSCRAMKeys]) async throws {
        try Self.validate(keys)
        let now = Milliseconds.from(Date())
        let logger = logger
        try await transaction { connection in
            // ON CONFLICT makes "taken" an empty result, not an error that aborts the transaction.
            guard
                let id = try await connection.value(
                    """
                    INSERT INTO accounts (username, created_at) VALUES (\(username), \(now))
                    ON CONFLICT (username) DO NOTHING RETURNING id
                    """, as: Int64.self, logger: logger)
            else { throw StorageError.accountExists(username: username) }
            try await Self.insert(keys, accountID: id, connection: connection, logger: logger)
        }
    }

    public func account(username: String) async throws -> AccountRecord? {
        let logger = logger
        return try await read { connection in
            let rows = try await connection.rows(
                """
                SELECT a.id, a.created_at, k.hash_name, k.salt, k.iterations, k.stored_key, k.server_key
                FROM accounts a LEFT JOIN account_keys k ON k.account_id = a.id
                WHERE a.username = \(username) ORDER BY k.hash_name
                """, logger: logger)
            guard let first = rows.first else { return nil }
            let (id, createdAt) = try first.decode((Int64, Int64).self)
            let keys = try rows.compactMap { row -> StoredSCRAMKeys? in
                let (_, _, hashName, salt, iterations, storedKey, serverKey) = try row.decode(
                    (Int64, Int64, String?, Data?, Int32?, Data?, Data?).self)
                guard let hashName, let salt, let iterations, let storedKey, let serverKey else { return nil }
                return StoredSCRAMKeys(
                    hashName: hashName, salt: [UInt8](salt), iterations: Int(iterations), storedKey: [UInt8](storedKey),
                    serverKey: [UInt8](serverKey))
            }
            return AccountRecord(username: username, keys: keys, createdAt: Milliseconds.date(createdAt), id: id)
        }
    }

    public func updateKeys(username: String, keys: [StoredSCRAMKeys], origin: AccountChange.Origin) async throws {
        try Self.validate(keys)
        let now = Milliseconds.from(Date())
        let logger = logger
        try await transaction { connection in
            try await Self.lockChangeFeed(connection, logger: logger)
            guard
                let id = try await connection.value(
                    "SELECT id FROM accounts WHERE username = \(username) FOR NO KEY UPDATE", as: Int64.self, logger: logger)
            else { throw StorageError.accountNotFound(username: username) }
            try await connection.run("DELETE FROM account_keys WHERE account_id = \(id)", logger: logger)
            try await Self.insert(keys, accountID: id, connection: connection, logger: logger)
            try await Self.recordChange(.passwordChanged, of: username, accountID: id, origin: origin, at: now, connection, logger: logger)
        }
    }

    @discardableResult
    public func deleteAccount(username: String, origin: AccountChange.Origin) async throws -> Bool {
        let now = Milliseconds.from(Date())
        let logger = logger
        // Its roster goes with it.
        defer { rosterObservers.changed(username) }
        return try await transaction { connection in
            try await Self.lockChangeFeed(connection, logger: logger)
            // Everything the account owns goes with it through ON DELETE CASCADE.
            guard
                let id = try await connection.value(
                    "DELETE FROM accounts WHERE username = \(username) RETURNING id", as: Int64.self, logger: logger)
            else { return false }
            try await Self.recordChange(.deleted, of: username, accountID: id, origin: origin, at: now, connection, logger: logger)
            return true
        }
    }

    public func usernames() async throws -> [String] {
        let logger = logger
        // COLLATE "C": byte order of the UTF-8, the same everywhere.
        return try await read { connection in
            try await connection.rows("SELECT username FROM accounts ORDER BY username", logger: logger).map { try $0.decode(String.self) }
        }
    }

    public func accountCount() async throws -> Int {
        let logger = logger
        return try await read { connection in
            Int(try await connection.value("SELECT COUNT(*) FROM accounts", as: Int64.self, logger: logger) ?? 0)
        }
    }

    static func validate(_ keys: [StoredSCRAMKeys]) throws {
        guard !keys.isEmpty else {
            throw StorageError.invalidArgument("an account needs keys for at least one hash")
        }
        let hashNames = keys.map(\.hashName)
        guard Set(hashNames).count == hashNames.count else {
            throw StorageError.invalidArgument("more than one set of keys for one hash in \(hashNames)")
        }
        if let bad = keys.first(where: { $0.iterations <= 0 || $0.iterations > Int(Int32.max) }) {
            throw StorageError.invalidArgument("\(bad.hashName) keys with \(bad.iterations) iterations")
        }
    }

    private static func insert(
        _ keys: [StoredSCRAMKeys], accountID: Int64, connection: PostgresConnection, logger: Logger
    ) async throws {
        for key in keys {
            try await connection.run(
                """
                INSERT INTO account_keys (account_id, hash_name, salt, iterations, stored_key, server_key)
                VALUES (\(accountID), \(key.hashName), \(Data(key.salt)), \(Int32(key.iterations)), \(Data(key.storedKey)),
                    \(Data(key.serverKey)))
                """, logger: logger)
        }
    }
}
