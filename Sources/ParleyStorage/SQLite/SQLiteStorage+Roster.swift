import Foundation
import GRDB

extension SQLiteStorage: RosterStore {
    public func modifyRoster<T: Sendable>(
        of user: String, _ body: @escaping @Sendable (inout any RosterTransaction) throws -> T
    ) async throws -> T {
        let tombstoneLimit = options.rosterTombstoneLimit
        // Reported even if the body threw: a reader's copy is only ever dropped too often.
        defer { rosterObservers.changed(user) }
        // Concurrent changes share a transaction, each in a savepoint of its own.
        return try await groupedWrites.write { db in
            let accountID = try Self.existingAccountID(of: user, in: db)
            let transaction = try SQLiteRosterTransaction(db: db, accountID: accountID)
            var handle: any RosterTransaction = transaction
            let result: T
            do {
                result = try body(&handle)
            } catch {
                transaction.abandon()
                throw error  // its savepoint (or the transaction) is rolled back
            }
            try transaction.finish(tombstoneLimit: tombstoneLimit)
            return result
        }
    }

    public func roster(of user: String) async throws -> (items: [RosterItem], version: Int64) {
        try await quickReads.read { db in
            guard let accountID = try Self.accountID(of: user, in: db) else { return ([], 0) }
            return (
                try RosterItem.all(of: accountID, in: db),
                try SQLiteRosterTransaction.version(of: accountID, in: db)
            )
        }
    }

    public func rosterChanges(of user: String, since version: Int64) async throws -> [RosterChange]? {
        try await pool.read { db in
            guard let accountID = try Self.accountID(of: user, in: db) else { return nil }
            let row = try Row.fetchOne(
                db, sql: "SELECT version, pruned_through FROM roster_versions WHERE account_id = ?",
                arguments: [accountID])
            let current: Int64 = row?["version"] ?? 0
            let prunedThrough: Int64 = row?["pruned_through"] ?? 0
            // Newer than current: from before a deletion of the account, or made up. Older than
            // the pruned tombstones: a removal may be missing.
            guard version >= prunedThrough, version <= current, version >= 0 else { return nil }
            if version == current { return [] }

            let items = try Row.fetchAll(
                db,
                sql: "SELECT \(RosterItem.columns) FROM roster_items WHERE account_id = ? AND version > ?",
                arguments: [accountID, version]
            ).map { row in
                let item = try RosterItem(row: row)
                return RosterChange(contact: item.contact, item: item, version: item.version)
            }
            let removals = try Row.fetchAll(
                db, sql: "SELECT contact, version FROM roster_tombstones WHERE account_id = ? AND version > ?",
                arguments: [accountID, version]
            ).map { row in RosterChange(contact: row["contact"], item: nil, version: row["version"]) }
            return (items + removals).sorted { ($0.version, $0.contact) < ($1.version, $1.contact) }
        }
    }

    public func pendingSubscriptions(of user: String) async throws -> [PendingSubscription] {
        try await pool.read { db in
            guard let accountID = try Self.accountID(of: user, in: db) else { return [] }
            return try PendingSubscription.all(of: accountID, in: db)
        }
    }

    public func rosterAndPendingSubscriptions(of user: String) async throws -> (items: [RosterItem], pending: [PendingSubscription]) {
        // One trip to a reader for the two reads of every login.
        try await quickReads.read { db in
            guard let accountID = try Self.accountID(of: user, in: db) else { return ([], []) }
            return (try RosterItem.all(of: accountID, in: db), try PendingSubscription.all(of: accountID, in: db))
        }
    }

    public func rosterOwners(naming contact: String) async throws -> [(user: String, subscription: Subscription)] {
        let rows = try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT accounts.username, roster_items.subscription
                    FROM roster_items JOIN accounts ON accounts.id = roster_items.account_id
                    WHERE roster_items.contact = ? ORDER BY accounts.username
                    """,
                arguments: [contact]
            ).map { row -> (String, String) in (row["username"], row["subscription"]) }
        }
        return try rows.map { username, subscriptionName in
            guard let subscription = Subscription(rawValue: subscriptionName) else {
                throw StorageError.unusableDatabase("roster item with subscription '\(subscriptionName)'")
            }
            return (user: username, subscription: subscription)
        }
    }
}

extension SQLiteStorage: RosterChangeObserving {
    public func observeRosterChanges(_ observer: @escaping @Sendable (String) -> Void) {
        rosterObservers.add(observer)
    }
}
