import Foundation

/// A deletion or password change, as recorded in the same transaction as the change itself.
public struct AccountChange: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case deleted
        case passwordChanged
    }

    /// Who made the change. A server ends the sessions of an account an admin changed, but
    /// not the session that changed its own password in-band (XEP-0077).
    public enum Origin: String, Sendable, Hashable, CaseIterable {
        /// `parleyd deluser` / `parleyd passwd` and other administrative tools.
        case admin
        /// The account's owner, over XMPP.
        case inband
    }

    /// Increases with every change; `changes(after:)` takes the last one a reader has seen.
    public var id: Int64
    public var username: String
    /// The id of the account changed (`AccountRecord.id`): a deletion ends only the sessions
    /// of that account, not those of a new one that took the username meanwhile. Nil for
    /// changes recorded before ids were kept.
    public var accountID: Int64?
    public var kind: Kind
    public var origin: Origin
    public var at: Date

    public init(id: Int64, username: String, accountID: Int64? = nil, kind: Kind, origin: Origin, at: Date) {
        self.id = id
        self.username = username
        self.accountID = accountID
        self.kind = kind
        self.origin = origin
        self.at = at
    }
}

/// Account changes made by any process that shares the storage, in the order they committed.
///
/// Admin commands run as separate processes on the same database while the server runs; the
/// server polls this feed to end the sessions of deleted accounts and of accounts whose
/// password an admin changed. A reader takes `latestChangeID()` at start-up (older changes
/// are not its business), then repeatedly asks for `changes(after:)` its last seen id.
public protocol AccountChangeFeed: Sendable {
    /// The id of the most recent change ever recorded (0 if none), even if it has been pruned.
    func latestChangeID() async throws -> Int64

    /// Changes with an id greater than `id`, oldest first.
    ///
    /// A backend must only return an id once every smaller id has committed or can never
    /// appear, or a polling reader would skip a change (SQLite gets this for free from its
    /// single writer; a PostgreSQL sequence does not).
    func changes(after id: Int64) async throws -> [AccountChange]

    /// Deletes changes recorded before `date`, returning how many. Readers poll every few
    /// seconds, so keeping a day is plenty.
    @discardableResult
    func pruneChanges(before date: Date) async throws -> Int
}
