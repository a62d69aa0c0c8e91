import Foundation
import GRDB

/// Reading roster items and pending requests from their SQLite rows.
extension RosterItem {
    static let columns = "contact, name, groups, subscription, ask_subscribe, approved, version"

    init(row: Row) throws {
        let subscriptionName: String = row["subscription"]
        // The CHECK constraint admits only these; anything else is a corrupt file.
        guard let subscription = Subscription(rawValue: subscriptionName) else {
            throw StorageError.unusableDatabase("roster item with subscription '\(subscriptionName)'")
        }
        self.init(
            contact: row["contact"], name: row["name"], groups: try Self.decode(groups: row["groups"]),
            subscription: subscription, askSubscribe: row["ask_subscribe"], approved: row["approved"],
            version: row["version"])
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
