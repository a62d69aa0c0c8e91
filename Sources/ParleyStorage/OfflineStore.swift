import Foundation

/// A message stored for a user who was offline (XEP-0160).
public struct OfflineMessage: Sendable, Hashable {
    /// Increases with every store, never reused (not even after a deletion).
    public var id: Int64
    public var stanza: String
    /// Stored with millisecond precision.
    public var storedAt: Date

    public init(id: Int64, stanza: String, storedAt: Date) {
        self.id = id
        self.stanza = stanza
        self.storedAt = storedAt
    }
}

/// Messages for offline users. Users are canonical usernames (account localparts).
public protocol OfflineStore: Sendable {
    /// Stores a message durably (committed and synced) before returning its id. Throws
    /// `StorageError.quotaExceeded(limit: quota)` if the user already has `quota` messages, and
    /// `StorageError.accountNotFound` if there is no such user.
    ///
    /// Concurrent calls are group-committed: those arriving while a write is in flight go into
    /// the next transaction together. One caller's messages get increasing ids in call order.
    func storeOffline(user: String, stanza: String, quota: Int) async throws -> Int64

    /// Stores several messages in the given order, each with its own outcome (quota and
    /// unknown users fail alone). Used by a caller that must keep the order in which it
    /// accepted messages, which separate concurrent calls would not.
    func storeOffline(_ requests: [OfflineStoreRequest]) async -> [Result<Int64, any Error>]

    /// Oldest first, at most `limit`.
    func offlineMessages(for user: String, limit: Int) async throws -> [OfflineMessage]

    /// Deletes those of `ids` that belong to `user`; other ids are ignored.
    func deleteOffline(user: String, ids: [Int64]) async throws

    func offlineCount(for user: String) async throws -> Int
}

/// One message to store, for `storeOffline(_:)`.
public struct OfflineStoreRequest: Sendable, Hashable {
    public var user: String
    public var stanza: String
    public var quota: Int

    public init(user: String, stanza: String, quota: Int) {
        self.user = user
        self.stanza = stanza
        self.quota = quota
    }
}
