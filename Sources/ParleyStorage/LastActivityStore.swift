import Foundation

/// When an account's last session ended and what it last said (XEP-0012 last activity).
public struct LastActivity: Sendable, Hashable {
    /// Stored with millisecond precision.
    public var loggedOutAt: Date
    /// The status text of the last unavailable presence the account broadcast; nil if it
    /// sent none (its connection dropped) or it had no text.
    public var status: String?

    public init(loggedOutAt: Date, status: String?) {
        self.loggedOutAt = loggedOutAt
        self.status = status
    }
}

/// Last logouts, one per account. Users are canonical usernames.
public protocol LastActivityStore: Sendable {
    /// nil when the user never logged out (or does not exist).
    func lastActivity(of user: String) async throws -> LastActivity?

    /// Replaces the user's record. Throws `StorageError.accountNotFound`.
    func setLastActivity(_ activity: LastActivity, for user: String) async throws
}
