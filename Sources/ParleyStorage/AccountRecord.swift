import Foundation

/// One account as storage holds it.
public struct AccountRecord: Sendable, Hashable {
    /// The JID localpart exactly as the caller gave it. Storage compares it byte for byte, so
    /// the caller applies the RFC 7622 preparation before every call.
    public var username: String
    /// One entry per hash function the account can authenticate with, ordered by `hashName`.
    public var keys: [StoredSCRAMKeys]
    public var createdAt: Date

    public init(username: String, keys: [StoredSCRAMKeys], createdAt: Date) {
        self.username = username
        self.keys = keys
        self.createdAt = createdAt
    }

    /// The keys for one hash function, e.g. `keys(for: "SHA-256")`.
    public func keys(for hashName: String) -> StoredSCRAMKeys? {
        keys.first { $0.hashName == hashName }
    }
}
