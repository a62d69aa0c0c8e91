import Foundation
import ParleyStorage
import PostgresNIO

extension PostgresStorage: RosterStore {
    public func modifyRoster<T: Sendable>(
        of user: String, _ body: @escaping @Sendable (inout any RosterTransaction) throws -> T
    ) async throws -> T {
        let tombstoneLimit = options.rosterTombstoneLimit
        let logger = logger
        // Reported even if the body threw: a reader's copy is only ever dropped too often.
        defer { rosterObservers.changed(user) }
        return try await transaction { connection in
            // NO KEY UPDATE: one roster writer per account at a time (on every node), while
            // rows referencing the account (offline messages, the archive) may still be written.
            guard
                let accountID = try await connection.value(
                    "SELECT id FROM accounts WHERE username = \(user) FOR NO KEY UPDATE", as: Int64.self, logger: logger)
            else { throw StorageError.accountNotFound(username: user) }
            let version = try await Self.rosterVersion(of: accountID, connection, logger: logger).version
            let transaction = PostgresRosterTransaction(
                version: version, items: try await Self.rosterItems(of: accountID, connection, logger: logger),
                pending: try await Self.pending(of: accountID, connection, logger: logger))
            var handle: any RosterTransaction = transaction
            defer { transaction.close() }
            let result = try body(&handle)  // a throw rolls the transaction back
            try await Self.write(transaction, accountID: accountID, tombstoneLimit: tombstoneLimit, connection, logger: logger)
            return result
        }
    }

    public func roster(of user: String) async throws -> (items: [RosterItem], version: Int64) {
        let logger = logger
        return try await read { connection in
            guard let accountID = try await connection.accountID(of: user, logger: logger) else { return ([], 0) }
            return (
                try await Self.rosterItems(of: accountID, connection, logger: logger),
                try await Self.rosterVersion(of: accountID, connection, logger: logger).version
            )
        }
    }

    public func rosterChanges(of user: String, since version: Int64) async throws -> [RosterChange]? {
        let logger = logger
        return try await transaction { connection in
            guard let accountID = try await connection.accountID(of: user, logger: logger) else { return nil }
            let (current, prunedThrough) = try await Self.rosterVersion(of: accountID, connection, logger: logger)
            // Newer than current: from before a deletion of the account, or made up. Older than
            // the pruned tombstones: a removal may be missing.
            guard version >= prunedThrough, version <= current, version >= 0 else { return nil }
            if version == current { return [] }
            let items = try await connection.rows(
                "SELECT \(unescaped: Self.itemColumns) FROM roster_items WHERE account_id = \(accountID) AND version > \(version)",
                logger: logger
            ).map { row in
                let item = try Self.item(row)
                return RosterChange(contact: item.contact, item: item, version: item.version)
            }
            let removals = try await connection.rows(
                "SELECT contact, version FROM roster_tombstones WHERE account_id = \(accountID) AND version > \(version)", logger: logger
            ).map { row in
                let (contact, version) = try row.decode((String, Int64).self)
                return RosterChange(contact: contact, item: nil, version: version)
            }
            return (items + removals).sorted { ($0.version, $0.contact) < ($1.version, $1.contact) }
        }
    }

    public func pendingSubscriptions(of user: String) async throws -> [PendingSubscription] {
        let logger = logger
        return try await read { connection in
            guard let accountID = try await connection.accountID(of: user, logger: logger) else { return [] }
            return try await Self.pending(of: accountID, connection, logger: logger)
        }
    }

    public func rosterOwners(naming contact: String) async throws -> [(user: String, subscription: Subscription)] {
        let logger = logger
        let rows = try await read { connection in
            try await connection.rows(
                """
                SELECT accounts.username, roster_items.subscription
                FROM roster_items JOIN accounts ON accounts.id = roster_items.account_id
                WHERE roster_items.contact = \(contact) ORDER BY accounts.username
                """, logger: logger
            ).map { try $0.decode((String, String).self) }
        }
        return try rows.map { username, subscriptionName in
            guard let subscription = Subscription(rawValue: subscriptionName) else {
                throw StorageError.unusableDatabase("roster item with subscription '\(subscriptionName)'")
            }
            return (user: username, subscription: subscription)
        }
    }

    // MARK: Rows

    static let itemColumns = "contact, name, groups, subscription, ask_subscribe, approved, version"

    static func item(_ row: PostgresRow) throws -> RosterItem {
        let (contact, name, groups, subscriptionName, ask, approved, version) = try row.decode(
            (String, String?, String, String, Bool, Bool, Int64).self)
        // The CHECK constraint admits only these; anything else is a corrupt database.
        guard let subscription = Subscription(rawValue: subscriptionName) else {
            throw StorageError.unusableDatabase("roster item with subscription '\(subscriptionName)'")
        }
        return RosterItem(
            contact: contact, name: name, groups: try decode(groups: groups), subscription: subscription, askSubscribe: ask,
            approved: approved, version: version)
    }

    static func rosterItems(of accountID: Int64, _ connection: PostgresConnection, logger: Logger) async throws -> [RosterItem] {
        try await connection.rows(
            "SELECT \(unescaped: itemColumns) FROM roster_items WHERE account_id = \(accountID) ORDER BY contact", logger: logger
        ).map(item)
    }

    static func rosterVersion(
        of accountID: Int64, _ connection: PostgresConnection, logger: Logger
    ) async throws -> (version: Int64, prunedThrough: Int64) {
        guard
            let row = try await connection.rows(
                "SELECT version, pruned_through FROM roster_versions WHERE account_id = \(accountID)", logger: logger
            ).first
        else { return (0, 0) }
        return try row.decode((Int64, Int64).self)
    }

    static func pending(of accountID: Int64, _ connection: PostgresConnection, logger: Logger) async throws -> [PendingSubscription] {
        try await connection.rows(
            """
            SELECT contact, stanza, received_at FROM roster_pending WHERE account_id = \(accountID)
            ORDER BY received_at, id
            """, logger: logger
        ).map { row in
            let (contact, stanza, receivedAt) = try row.decode((String, String, Int64).self)
            return PendingSubscription(contact: contact, stanza: stanza, receivedAt: Milliseconds.date(receivedAt))
        }
    }

    /// A JSON array, as in the SQLite file: group names are arbitrary strings.
    static func encode(groups: [String]) throws -> String {
        String(decoding: try JSONEncoder().encode(groups), as: UTF8.self)
    }

    static func decode(groups: String) throws -> [String] {
        if groups == "[]" { return [] }
        return try JSONDecoder().decode([String].self, from: Data(groups.utf8))
    }

    /// Writes what the closure changed, then the new version, then prunes tombstones beyond
    /// `tombstoneLimit` (versions up to the newest one pruned can no longer be answered).
    private static func write(
        _ transaction: PostgresRosterTransaction, accountID: Int64, tombstoneLimit: Int, _ connection: PostgresConnection,
        logger: Logger
    ) async throws {
        if !transaction.pendingChanged.isEmpty {
            let contacts = Array(transaction.pendingChanged)
            try await connection.run(
                "DELETE FROM roster_pending WHERE account_id = \(accountID) AND contact = ANY(\(contacts))", logger: logger)
            // Re-inserted in order: a replaced request gets a new id and so moves to the end.
            for pending in transaction.pendingRequests where transaction.pendingChanged.contains(pending.contact) {
                try await connection.run(
                    """
                    INSERT INTO roster_pending (account_id, contact, stanza, received_at)
                    VALUES (\(accountID), \(pending.contact), \(pending.stanza), \(Milliseconds.from(pending.receivedAt)))
                    """, logger: logger)
            }
        }
        guard let newVersion = transaction.newVersion else { return }
        for item in transaction.changedItems {
            try await connection.run(
                """
                INSERT INTO roster_items (account_id, contact, name, groups, subscription, ask_subscribe, approved, version)
                VALUES (\(accountID), \(item.contact), \(item.name), \(try encode(groups: item.groups)), \(item.subscription.rawValue),
                    \(item.askSubscribe), \(item.approved), \(newVersion))
                ON CONFLICT (account_id, contact) DO UPDATE SET
                    name = excluded.name, groups = excluded.groups, subscription = excluded.subscription,
                    ask_subscribe = excluded.ask_subscribe, approved = excluded.approved, version = excluded.version
                """, logger: logger)
        }
        if !transaction.setContacts.isEmpty {
            let contacts = Array(transaction.setContacts)
            try await connection.run(
                "DELETE FROM roster_tombstones WHERE account_id = \(accountID) AND contact = ANY(\(contacts))", logger: logger)
        }
        if !transaction.removedContacts.isEmpty {
            let contacts = Array(transaction.removedContacts)
            try await connection.run(
                "DELETE FROM roster_items WHERE account_id = \(accountID) AND contact = ANY(\(contacts))", logger: logger)
            try await connection.run(
                """
                INSERT INTO roster_tombstones (account_id, contact, version)
                SELECT \(accountID), unnest(\(contacts)::text[]), \(newVersion)
                ON CONFLICT (account_id, contact) DO UPDATE SET version = excluded.version
                """, logger: logger)
        }
        try await connection.run(
            """
            INSERT INTO roster_versions (account_id, version) VALUES (\(accountID), \(newVersion))
            ON CONFLICT (account_id) DO UPDATE SET version = excluded.version
            """, logger: logger)
        guard !transaction.removedContacts.isEmpty else { return }
        let offset = Int64(max(tombstoneLimit, 0))
        guard
            let cutoff = try await connection.value(
                """
                SELECT version FROM roster_tombstones WHERE account_id = \(accountID)
                ORDER BY version DESC LIMIT 1 OFFSET \(offset)
                """, as: Int64.self, logger: logger)
        else { return }
        try await connection.run(
            "DELETE FROM roster_tombstones WHERE account_id = \(accountID) AND version <= \(cutoff)", logger: logger)
        try await connection.run(
            "UPDATE roster_versions SET pruned_through = GREATEST(pruned_through, \(cutoff)) WHERE account_id = \(accountID)",
            logger: logger)
    }
}

extension PostgresStorage: RosterChangeObserving {
    public func observeRosterChanges(_ observer: @escaping @Sendable (String) -> Void) {
        rosterObservers.add(observer)
    }
}
