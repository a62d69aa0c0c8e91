import Foundation
import GRDB

/// Reading roster items and pending requests from their SQLite rows.
extension RosterItem {
    static let columns = "contact, name, groups, subscription, ask_subscribe, approved, version"

    /// A row of `columns`, read by position: by name, GRDB lowercases the name for every
    /// value read, and that was most of the cost of reading a roster (which a PEP publish
    /// does for the owner's whole roster).
    init(row: Row) throws {
        let subscriptionName: String = row[3]
        // The CHECK constraint admits only these; anything else is a corrupt file.
        guard let subscription = Subscription(rawValue: subscriptionName) else {
            throw StorageError.unusableDatabase("roster item with subscription '\(subscriptionName)'")
        }
        self.init(
            contact: row[0], name: row[1], groups: try Self.decode(groups: row[2]),
            subscription: subscription, askSubscribe: row[4], approved: row[5], version: row[6])
    }

    static func all(of accountID: Int64, in db: Database) throws -> [RosterItem] {
        // Read at every presence broadcast: the statement is prepared once per connection.
        try Row.fetchAll(
            db.cachedStatement(sql: "SELECT \(columns) FROM roster_items WHERE account_id = ? ORDER BY contact"),
            arguments: [accountID]
        ).map(RosterItem.init(row:))
    }

    /// A JSON array: group names are arbitrary strings. A repeated name keeps its first place.
    static func encode(groups: [String]) throws -> String {
        var seen = Set<String>()
        let unique = groups.filter { seen.insert($0).inserted }
        return String(decoding: try JSONEncoder().encode(unique), as: UTF8.self)
    }

    static func decode(groups: String) throws -> [String] {
        if groups == "[]" { return [] }
        return try JSONDecoder().decode([String].self, from: Data(groups.utf8))
    }
}

extension PendingSubscription {
    init(row: Row) {
        self.init(contact: row["contact"], stanza: row["stanza"], receivedAt: row["received_at"])
    }

    static func all(of accountID: Int64, in db: Database) throws -> [PendingSubscription] {
        try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT contact, stanza, received_at FROM roster_pending WHERE account_id = ?
                    ORDER BY received_at, id
                    """),
            arguments: [accountID]
        ).map(PendingSubscription.init(row:))
    }
}
