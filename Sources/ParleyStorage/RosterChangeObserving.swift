import Foundation

/// A roster store that tells when a roster may have changed, so that readers may keep a copy
/// (PEP keeps each publisher's subscribed contacts) and know when to drop it. Every change
/// made through the store is reported, whichever module made it; a change made by another
/// process is not (today none makes one: `parleyd deluser` deletes accounts, which the
/// server learns from the account change feed).
public protocol RosterChangeObserving: Sendable {
    /// `observer` is called with the username after each committed change of that user's
    /// roster and after the removal of the account, on the thread that made the change.
    func observeRosterChanges(_ observer: @escaping @Sendable (String) -> Void)
}

/// The observers of one store.
public final class RosterChangeObservers: @unchecked Sendable {
    private let lock = NSLock()
    private var observers: [@Sendable (String) -> Void] = []

    public init() {}

    public func add(_ observer: @escaping @Sendable (String) -> Void) {
        lock.withLock { observers.append(observer) }
    }

    public func changed(_ username: String) {
        for observer in lock.withLock({ observers }) { observer(username) }
    }
}
