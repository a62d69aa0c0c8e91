import Foundation

/// One account as storage holds it.
public struct AccountRecord: Sendable, Hashable {
    /// The JID localpart exactly as the caller gave it. Storage compares it byte for byte, so
    /// the caller applies the RFC 7622 preparation before every call.
    public var username: String
    /// One entry per hash function the account can authenticate with, ordered by `hashName`.
    public var keys: [StoredSCRAMKeys]
    public var createdAt: Date
    /// The account's row id: never reused, so it tells an account from a later one with the
    /// same username (a deletion in the `AccountChangeFeed` names it). Nil from a store that
    /// has none.
    public var id: Int64?

    public init(username: String, keys: [StoredSCRAMKeys], createdAt: Date, id: Int64? = nil) {
        self.username = username
        self.id = id
        self.keys = keys
        self.createdAt = createdAt
    }

    /// The keys for one hash function, e.g. `keys(for: "SHA-256")`.
    public func keys(for hashName: String) -> StoredSCRAMKeys? {
        keys.first { $0.hashName == hashName }
    }
}
