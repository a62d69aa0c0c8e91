import Foundation
import GRDB

extension SQLiteStorage: OfflineStore {
    public func storeOffline(user: String, stanza: String, quota: Int) async throws -> Int64 {
        try await offlineWriter.submit(user: user, .store(stanza: stanza, quota: quota))
    }

    public func storeOffline(_ requests: [OfflineStoreRequest]) async -> [Result<Int64, any Error>] {
        await offlineWriter.submitAll(requests.map { ($0.user, .store(stanza: $0.stanza, quota: $0.quota)) })
    }

    public func offlineMessages(for user: String, limit: Int) async throws -> [OfflineMessage] {
        guard limit > 0 else { return [] }
        return try await quickReads.read { db in
            guard let accountID = try Self.accountID(of: user, in: db) else { return [] }
            return try Row.fetchAll(
                db.cachedStatement(
                    sql: "SELECT id, stanza, stored_at FROM offline_messages WHERE account_id = ? ORDER BY id LIMIT ?"),
                arguments: [accountID, limit]
            ).map { row in OfflineMessage(id: row["id"], stanza: row["stanza"], storedAt: row["stored_at"]) }
        }
    }

    /// Group-committed with the stores, so the deletions of many sessions share one commit.
    public func deleteOffline(user: String, ids: [Int64]) async throws {
        guard !ids.isEmpty else { return }
        _ = try await offlineWriter.submit(user: user, .delete(ids: ids))
    }

    public func offlineCount(for user: String) async throws -> Int {
        try await quickReads.read { db in
            guard let accountID = try Self.accountID(of: user, in: db) else { return 0 }
            return try Int.fetchOne(
                db.cachedStatement(sql: "SELECT COUNT(*) FROM offline_messages WHERE account_id = ?"),
                arguments: [accountID]) ?? 0
        }
    }
}
