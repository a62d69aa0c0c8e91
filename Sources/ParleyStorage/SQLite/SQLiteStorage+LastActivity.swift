import Foundation
import GRDB

extension SQLiteStorage: LastActivityStore {
    public func lastActivity(of user: String) async throws -> LastActivity? {
        try await pool.read { db in
            let row = try Row.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT logged_out_at, status FROM last_activity
                        JOIN accounts ON accounts.id = last_activity.account_id WHERE accounts.username = ?
                        """),
                arguments: [user])
            return row.map { LastActivity(loggedOutAt: Self.date(milliseconds: $0["logged_out_at"]), status: $0["status"]) }
        }
    }

    public func setLastActivity(_ activity: LastActivity, for user: String) async throws {
        // Every logout writes here: under load, logouts share commits.
        try await groupedWrites.write { db in
            let accountID = try Self.existingAccountID(of: user, in: db)
            try db.cachedStatement(
                sql: """
                    INSERT INTO last_activity (account_id, logged_out_at, status) VALUES (?, ?, ?)
                    ON CONFLICT (account_id) DO UPDATE SET logged_out_at = excluded.logged_out_at, status = excluded.status
                    """
            ).execute(arguments: [accountID, Self.milliseconds(activity.loggedOutAt), activity.status])
        }
    }
}
