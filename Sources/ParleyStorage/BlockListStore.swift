/// The JIDs a user blocks (XEP-0191). Users are canonical usernames; JIDs are stored exactly
/// as given (the caller normalises them; a blocked item may be a bare JID, a full JID or a
/// domain).
public protocol BlockListStore: Sendable {
    /// Sorted by the bytes of the UTF-8; empty for an unknown user.
    func blockList(of user: String) async throws -> [String]

    /// Every account's block list that is not empty, by username, each sorted as
    /// `blockList(of:)`: what a server loads at start, in one query rather than one per account.
    func allBlockLists() async throws -> [String: [String]]

    /// Adds `jids`; those already blocked stay. Throws `StorageError.accountNotFound`.
    func block(user: String, jids: [String]) async throws

    /// Removes `jids`; an empty list unblocks all. Throws `StorageError.accountNotFound`.
    func unblock(user: String, jids: [String]) async throws
}
