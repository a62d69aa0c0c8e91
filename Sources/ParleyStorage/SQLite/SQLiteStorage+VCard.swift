import Foundation
import GRDB

extension SQLiteStorage: VCardStore {
    public func vCard(of user: String) async throws -> StoredVCard? {
        try await quickReads.read { db in
            let row = try Row.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT vcard, photo_hash, updated_at FROM vcards
                        JOIN accounts ON accounts.id = vcards.account_id WHERE accounts.username = ?
                        """),
                arguments: [user])
            return row.map {
                StoredVCard(xml: $0["vcard"], photoHash: $0["photo_hash"], updatedAt: Self.date(milliseconds: $0["updated_at"]))
            }
        }
    }

    public func setVCard(_ vCard: StoredVCard, for user: String) async throws {
        try await pool.write { db in
            let accountID = try Self.existingAccountID(of: user, in: db)
            try db.execute(
                sql: """
                    INSERT INTO vcards (account_id, vcard, photo_hash, updated_at) VALUES (?, ?, ?, ?)
                    ON CONFLICT (account_id) DO UPDATE SET
                        vcard = excluded.vcard, photo_hash = excluded.photo_hash, updated_at = excluded.updated_at
                    """,
                arguments: [accountID, vCard.xml, vCard.photoHash, Self.milliseconds(vCard.updatedAt)])
        }
    }

    public func deleteVCard(of user: String) async throws -> Bool {
        try await pool.write { db in
            guard let accountID = try Self.accountID(of: user, in: db) else { return false }
            try db.execute(sql: "DELETE FROM vcards WHERE account_id = ?", arguments: [accountID])
            return db.changesCount > 0
        }
    }
}
