import Foundation

/// An account's vCard (XEP-0054) as stored: the whole `<vCard xmlns='vcard-temp'/>` element
/// as XML text, and the SHA-1 of its photo (XEP-0153), worked out once when it is written so
/// that presence and avatar code can read the hash without parsing the vCard.
public struct StoredVCard: Sendable, Hashable {
    public var xml: String
    /// Lowercase hex SHA-1 of the decoded PHOTO/BINVAL; nil when the vCard has no photo.
    public var photoHash: String?
    /// Stored with millisecond precision.
    public var updatedAt: Date

    public init(xml: String, photoHash: String?, updatedAt: Date) {
        self.xml = xml
        self.photoHash = photoHash
        self.updatedAt = updatedAt
    }
}

/// vCards, one per account. Users are canonical usernames (account localparts).
public protocol VCardStore: Sendable {
    /// nil when the user has no vCard or does not exist.
    func vCard(of user: String) async throws -> StoredVCard?

    /// Replaces the user's vCard (XEP-0054 has no partial updates). Throws
    /// `StorageError.accountNotFound`.
    func setVCard(_ vCard: StoredVCard, for user: String) async throws

    /// Removes the user's vCard; false if there was none.
    @discardableResult
    func deleteVCard(of user: String) async throws -> Bool
}
