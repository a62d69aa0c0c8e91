import Foundation
import GRDB

/// `RosterTransaction` over one open GRDB write transaction.
///
/// A class, so the state (the new version, whether anything was removed) is shared with
/// `modifyRoster` however the body copies the existential it is handed.
final class SQLiteRosterTransaction: RosterTransaction {
    private let db: Database
    private let accountID: Int64
    let version: Int64
    /// `version + 1` once an item has changed.
    private(set) var newVersion: Int64?
    private var removedAny = false
    private var isOpen = true

    init(db: Database, accountID: Int64) throws {
        self.db = db
        self.accountID = accountID
        version = try Self.version(of: accountID, in: db)
    }

    static func version(of accountID: Int64, in db: Database) throws -> Int64 {
        try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT version FROM roster_versions WHERE account_id = ?"), arguments: [accountID]) ?? 0
    }

    func item(_ contact: String) throws -> RosterItem? {
        try checkOpen()
        return try Row.fetchOne(
            db.cachedStatement(sql: "SELECT \(RosterItem.columns) FROM roster_items WHERE account_id = ? AND contact = ?"),
            arguments: [accountID, contact]
        ).map(RosterItem.init(row:))
    }

    func items() throws -> [RosterItem] {
        try checkOpen()
        return try RosterItem.all(of: accountID, in: db)
    }

    func itemCount() throws -> Int {
        try checkOpen()
        return try Int.fetchOne(
            db.cachedStatement(sql: "SELECT COUNT(*) FROM roster_items WHERE account_id = ?"), arguments: [accountID]) ?? 0
    }

    func setItem(_ item: RosterItem) throws {
        try checkOpen()
        let version = bump()
        try db.cachedStatement(
            sql: """
                INSERT INTO roster_items
                    (account_id, contact, name, groups, subscription, ask_subscribe, approved, version)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (account_id, contact) DO UPDATE SET
                    name = excluded.name, groups = excluded.groups, subscription = excluded.subscription,
                    ask_subscribe = excluded.ask_subscribe, approved = excluded.approved,
                    version = excluded.version
                """
        ).execute(
            arguments: [
                accountID, item.contact, item.name, try RosterItem.encode(groups: item.groups),
                item.subscription.rawValue, item.askSubscribe, item.approved, version,
            ])
        try db.cachedStatement(sql: "DELETE FROM roster_tombstones WHERE account_id = ? AND contact = ?")
            .execute(arguments: [accountID, item.contact])
    }

    func removeItem(_ contact: String) throws {
        try checkOpen()
        try db.execute(
            sql: "DELETE FROM roster_items WHERE account_id = ? AND contact = ?", arguments: [accountID, contact])
        guard db.changesCount > 0 else { return }
        removedAny = true
        try db.execute(
            sql: """
                INSERT INTO roster_tombstones (account_id, contact, version) VALUES (?, ?, ?)
                ON CONFLICT (account_id, contact) DO UPDATE SET version = excluded.version
                """,
            arguments: [accountID, contact, bump()])
    }

    func pending(_ contact: String) throws -> PendingSubscription? {
        try checkOpen()
        return try Row.fetchOne(
            db.cachedStatement(
                sql: "SELECT contact, stanza, received_at FROM roster_pending WHERE account_id = ? AND contact = ?"),
            arguments: [accountID, contact]
        ).map(PendingSubscription.init(row:))
    }

    func allPending() throws -> [PendingSubscription] {
        try checkOpen()
        return try PendingSubscription.all(of: accountID, in: db)
    }

    func setPending(_ pending: PendingSubscription) throws {
        try checkOpen()
        // REPLACE deletes the earlier row and inserts a new one with a new id.
        try db.cachedStatement(
            sql: """
                INSERT OR REPLACE INTO roster_pending (account_id, contact, stanza, received_at)
                VALUES (?, ?, ?, ?)
                """
        ).execute(arguments: [accountID, pending.contact, pending.stanza, pending.receivedAt])
    }

    func removePending(_ contact: String) throws {
        try checkOpen()
        try db.cachedStatement(sql: "DELETE FROM roster_pending WHERE account_id = ? AND contact = ?")
            .execute(arguments: [accountID, contact])
    }

    /// Records the new version and prunes tombstones beyond `tombstoneLimit`; closes the
    /// transaction to further use.
    func finish(tombstoneLimit: Int) throws {
        try checkOpen()
        isOpen = false
        guard let newVersion else { return }
        try db.cachedStatement(
            sql: """
                INSERT INTO roster_versions (account_id, version) VALUES (?, ?)
                ON CONFLICT (account_id) DO UPDATE SET version = excluded.version
                """
        ).execute(arguments: [accountID, newVersion])
        guard removedAny else { return }
        // Versions up to the newest tombstone beyond the limit lose theirs; deltas from before
        // it are answered with nil from then on.
        guard
            let cutoff = try Int64.fetchOne(
                db,
                sql: """
                    SELECT version FROM roster_tombstones WHERE account_id = ?
                    ORDER BY version DESC LIMIT 1 OFFSET ?
                    """,
                arguments: [accountID, max(tombstoneLimit, 0)])
        else { return }
        try db.execute(
            sql: "DELETE FROM roster_tombstones WHERE account_id = ? AND version <= ?", arguments: [accountID, cutoff])
        try db.execute(
            sql: "UPDATE roster_versions SET pruned_through = MAX(pruned_through, ?) WHERE account_id = ?",
            arguments: [cutoff, accountID])
    }

    /// Closes the transaction without recording anything (the body threw).
    func abandon() { isOpen = false }

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
