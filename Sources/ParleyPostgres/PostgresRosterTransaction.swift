import Foundation
import ParleyStorage

/// `RosterTransaction` over a copy of one user's roster and pending requests, read inside an
/// open PostgreSQL transaction that holds the account's row lock.
///
/// The protocol is synchronous (a roster change is decided in one closure that must not
/// suspend), while every PostgreSQL query suspends: so the closure works on the copy, and
/// `PostgresStorage.modifyRoster` then writes what it changed, in the same transaction. The
/// row lock keeps other writers of this roster out meanwhile, on any node.
final class PostgresRosterTransaction: RosterTransaction {
    let version: Int64
    /// `version + 1` once an item has changed.
    private(set) var newVersion: Int64?
    private var itemsByContact: [String: RosterItem]
    /// Requests in arrival order; a replaced one moves to the end.
    private(set) var pendingRequests: [PendingSubscription]
    /// Contacts whose item was set (written with the new version) or removed (tombstoned).
    private(set) var setContacts: Set<String> = []
    private(set) var removedContacts: Set<String> = []
    /// Contacts whose request was set or removed.
    private(set) var pendingChanged: Set<String> = []
    private var isOpen = true

    init(version: Int64, items: [RosterItem], pending: [PendingSubscription]) {
        self.version = version
        itemsByContact = Dictionary(items.map { ($0.contact, $0) }, uniquingKeysWith: { first, _ in first })
        pendingRequests = pending
    }

    func item(_ contact: String) throws -> RosterItem? {
        try checkOpen()
        return itemsByContact[contact]
    }

    func items() throws -> [RosterItem] {
        try checkOpen()
        return itemsByContact.values.sorted { Array($0.contact.utf8).lexicographicallyPrecedes($1.contact.utf8) }
    }

    func itemCount() throws -> Int {
        try checkOpen()
        return itemsByContact.count
    }

    func setItem(_ item: RosterItem) throws {
        try checkOpen()
        var item = item
        item.version = bump()
        var seen = Set<String>()
        item.groups = item.groups.filter { seen.insert($0).inserted }
        itemsByContact[item.contact] = item
        setContacts.insert(item.contact)
        removedContacts.remove(item.contact)
    }

    func removeItem(_ contact: String) throws {
        try checkOpen()
        guard itemsByContact.removeValue(forKey: contact) != nil else { return }
        _ = bump()
        setContacts.remove(contact)
        removedContacts.insert(contact)
    }

    func pending(_ contact: String) throws -> PendingSubscription? {
        try checkOpen()
        return pendingRequests.first { $0.contact == contact }
    }

    func allPending() throws -> [PendingSubscription] {
        try checkOpen()
        return pendingRequests
    }

    func setPending(_ pending: PendingSubscription) throws {
        try checkOpen()
        pendingRequests.removeAll { $0.contact == pending.contact }
        pendingRequests.append(pending)
        // Oldest first, as the store reads them back: by time, then by arrival.
        pendingRequests = pendingRequests.enumerated()
            .sorted { ($0.element.receivedAt, $0.offset) < ($1.element.receivedAt, $1.offset) }.map(\.element)
        pendingChanged.insert(pending.contact)
    }

    func removePending(_ contact: String) throws {
        try checkOpen()
        pendingRequests.removeAll { $0.contact == contact }
        pendingChanged.insert(contact)
    }

    /// The items to write, with their new version.
    var changedItems: [RosterItem] { setContacts.sorted().compactMap { itemsByContact[$0] } }

    /// Closes the transaction to further use.
    func close() { isOpen = false }

    private func bump() -> Int64 {
        if let newVersion { return newVersion }
        let next = version + 1
        newVersion = next
        return next
    }

    private func checkOpen() throws {
        guard isOpen else {
            throw StorageError.invalidArgument("a roster transaction was used after its modifyRoster returned")
        }
    }
}
