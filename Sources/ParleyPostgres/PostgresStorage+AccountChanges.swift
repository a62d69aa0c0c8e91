import Foundation
import ParleyStorage
import PostgresNIO

extension PostgresStorage: AccountChangeFeed {
    public func latestChangeID() async throws -> Int64 {
        let logger = logger
        // The identity's sequence remembers the highest id ever handed out, even once its
        // row has been pruned; MAX(id) would go back to 0.
        return try await read { connection in
            guard
                let row = try await connection.rows(
                    "SELECT last_value, is_called FROM account_changes_id_seq", logger: logger
                ).first
            else { return 0 }
            let (last, called) = try row.decode((Int64, Bool).self)
            return called ? last : 0
        }
    }

    public func changes(after id: Int64) async throws -> [AccountChange] {
        let logger = logger
        // Writers of the feed take its table lock (`lockChangeFeed`), so changes commit in id
        // order and `id > cursor` cannot skip one that commits later with a smaller id.
        return try await read { connection in
            try await connection.rows(
                "SELECT id, username, account_id, kind, origin, at FROM account_changes WHERE id > \(id) ORDER BY id",
                logger: logger
            ).map { row in
                let (id, username, accountID, kindName, originName, at) = try row.decode(
                    (Int64, String, Int64?, String, String, Int64).self)
                // The CHECK constraints admit only these; anything else is a corrupt database.
                guard let kind = AccountChange.Kind(rawValue: kindName), let origin = AccountChange.Origin(rawValue: originName) else {
                    throw StorageError.unusableDatabase("account_changes row \(id) has kind '\(kindName)', origin '\(originName)'")
                }
                return AccountChange(
                    id: id, username: username, accountID: accountID, kind: kind, origin: origin, at: Milliseconds.date(at))
            }
        }
    }

    @discardableResult
    public func pruneChanges(before date: Date) async throws -> Int {
        let logger = logger
        let cutoff = Milliseconds.from(date)
        return try await transaction { connection in
            try await connection.rows("DELETE FROM account_changes WHERE at < \(cutoff) RETURNING id", logger: logger).count
        }
    }

    /// Serialises the writers of the feed until their transaction ends: an id taken from the
    /// sequence is then committed before the next one is taken. Changes are rare (deletions,
    /// password changes), so the lock costs nothing that matters; readers do not take it.
    static func lockChangeFeed(_ connection: PostgresConnection, logger: Logger) async throws {
        try await connection.run("LOCK TABLE account_changes IN SHARE ROW EXCLUSIVE MODE", logger: logger)
    }

    /// Written inside the transaction that makes the change, so a reader sees both or neither.
    static func recordChange(
        _ kind: AccountChange.Kind, of username: String, accountID: Int64, origin: AccountChange.Origin, at milliseconds: Int64,
        _ connection: PostgresConnection, logger: Logger
    ) async throws {
        try await connection.run(
            """
            INSERT INTO account_changes (username, account_id, kind, origin, at)
            VALUES (\(username), \(accountID), \(kind.rawValue), \(origin.rawValue), \(milliseconds))
            """, logger: logger)
    }
}
