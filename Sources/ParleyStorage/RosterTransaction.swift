/// One roster transaction: reads and writes of a user's roster and pending requests, applied
/// atomically by `RosterStore.modifyRoster`.
///
/// Every `setItem`/`removeItem` in a transaction bumps the user's roster version once: all items
/// changed in it get the new version. Pending requests are not part of the roster and do not
/// bump it. A transaction is valid only inside the closure it was given to.
public protocol RosterTransaction {
    /// The roster version before this transaction's changes.
    var version: Int64 { get }
    func item(_ contact: String) throws -> RosterItem?
    /// Ordered by contact (bytes of the UTF-8).
    func items() throws -> [RosterItem]
    func itemCount() throws -> Int
    /// Adds or replaces the item for `item.contact`.
    mutating func setItem(_ item: RosterItem) throws
    /// Removes the item, leaving a tombstone for deltas. Removing a contact that is not in the
    /// roster changes nothing (and does not bump the version).
    mutating func removeItem(_ contact: String) throws
    func pending(_ contact: String) throws -> PendingSubscription?
    /// Oldest first.
    func allPending() throws -> [PendingSubscription]
    /// Replaces an earlier one from the same contact.
    mutating func setPending(_ pending: PendingSubscription) throws
    mutating func removePending(_ contact: String) throws
}
