import Foundation
import ParleyStorage
import PostgresNIO

extension PostgresStorage: OfflineStore {
    public func storeOffline(user: String, stanza: String, quota: Int) async throws -> Int64 {
        try await offlineWriter.submit(user: user, .store(stanza: stanza, quota: quota))
    }

    public func storeOffline(_ requests: [OfflineStoreRequest]) async -> [Result<Int64, any Error>] {
        await offlineWriter.submitAll(requests.map { ($0.user, .store(stanza: $0.stanza, quota: $0.quota)) })
    }

    public func offlineMessages(for user: String, limit: Int) async throws -> [OfflineMessage] {
        guard limit > 0 else { return [] }
        let logger = logger
        return try await read { connection in
            try await connection.rows(
                """
                SELECT offline_messages.id, stanza, stored_at FROM offline_messages
                JOIN accounts ON accounts.id = offline_messages.account_id
                WHERE accounts.username = \(user) ORDER BY offline_messages.id LIMIT \(Int64(limit))
                """, logger: logger
            ).map { row in
                let (id, stanza, storedAt) = try row.decode((Int64, String, Int64).self)
                return OfflineMessage(id: id, stanza: stanza, storedAt: Milliseconds.date(storedAt))
            }
        }
    }

    /// Group-committed with the stores, so the deletions of many sessions share one commit.
    public func deleteOffline(user: String, ids: [Int64]) async throws {
        guard !ids.isEmpty else { return }
        _ = try await offlineWriter.submit(user: user, .delete(ids: ids))
    }

    public func offlineCount(for user: String) async throws -> Int {
        let logger = logger
        return try await read { connection in
            Int(
                try await connection.value(
                    """
                    SELECT COUNT(*) FROM offline_messages JOIN accounts ON accounts.id = offline_messages.account_id
                    WHERE accounts.username = \(user)
                    """, as: Int64.self, logger: logger) ?? 0)
        }
    }
}
