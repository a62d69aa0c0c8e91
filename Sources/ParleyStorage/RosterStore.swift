/// Rosters, their versions (XEP-0237) and unanswered inbound subscription requests.
///
/// Users are identified by their canonical username (the account localpart), contacts by their
/// canonical bare JID; the caller normalises both, storage compares them byte for byte. Reads
/// for a user that does not exist return an empty result; writes throw
/// `StorageError.accountNotFound`.
public protocol RosterStore: Sendable {
    /// Runs `body` in one write transaction on `user`'s roster and returns its result. Its
    /// changes are committed together; if it throws, none are. Throws
    /// `StorageError.accountNotFound` if there is no such user.
    func modifyRoster<T: Sendable>(
        of user: String, _ body: @escaping @Sendable (inout any RosterTransaction) throws -> T
    ) async throws -> T

    /// All items, ordered by contact, and the current roster version.
    func roster(of user: String) async throws -> (items: [RosterItem], version: Int64)

    /// Changes after `version` (a removal appears as item nil), oldest first; empty when
    /// `version` is current; nil when `version` is unknown or too old to answer (then send the
    /// full roster).
    func rosterChanges(of user: String, since version: Int64) async throws -> [RosterChange]?

    /// Oldest first.
    func pendingSubscriptions(of user: String) async throws -> [PendingSubscription]

    /// The items (ordered by contact) and the pending requests (oldest first) together: what
    /// a session's initial presence needs, read at every login.
    func rosterAndPendingSubscriptions(of user: String) async throws -> (items: [RosterItem], pending: [PendingSubscription])

    /// The local users whose rosters list `contact` (a bare JID), with their subscription to
    /// it, ordered by user: for presence probes and broadcasts among local users.
    func rosterOwners(naming contact: String) async throws -> [(user: String, subscription: Subscription)]
}

extension RosterStore {
    /// Two reads; a backend that can should answer in one.
    public func rosterAndPendingSubscriptions(of user: String) async throws -> (items: [RosterItem], pending: [PendingSubscription]) {
        (try await roster(of: user).items, try await pendingSubscriptions(of: user))
    }
}
