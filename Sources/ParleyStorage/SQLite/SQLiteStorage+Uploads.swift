import Foundation
import GRDB

extension SQLiteStorage: UploadMetadataStore {
    private static let columns = """
        uploads.id, accounts.username, uploads.account_id, uploads.filename, uploads.size,
        uploads.content_type, uploads.created_at, uploads.state
        """

    public func insertUpload(_ record: UploadRecord) async throws -> UploadRecord {
        try await pool.write { db in
            var record = record
            record.accountID = try Self.existingAccountID(of: record.owner, in: db)
            try Self.insert(record, in: db)
            return record
        }
    }

    public func upload(id: String) async throws -> UploadRecord? {
        try await pool.read { db in
            try Row.fetchOne(
                db.cachedStatement(
                    sql: "SELECT \(Self.columns) FROM uploads JOIN accounts ON accounts.id = uploads.account_id WHERE uploads.id = ?"),
                arguments: [id]
            ).map(Self.record)
        }
    }

    public func uploadUsage(of owner: String, since date: Date) async throws -> (recent: Int64, stored: Int64) {
        try await pool.read { db in
            let accountID = try Self.existingAccountID(of: owner, in: db)
            let row = try Row.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT COALESCE(SUM(CASE WHEN created_at >= ? THEN size ELSE 0 END), 0) AS recent,
                               COALESCE(SUM(CASE WHEN state = 'stored' THEN size ELSE 0 END), 0) AS stored
                        FROM uploads WHERE account_id = ?
                        """),
                arguments: [Self.milliseconds(date), accountID])
            return (row?["recent"] ?? 0, row?["stored"] ?? 0)
        }
    }

    public func claimUpload(_ record: UploadRecord, dailyQuota: Int64, totalQuota: Int64) async throws -> UploadClaim {
        try await pool.write { db in
            var record = record
            record.accountID = try Self.existingAccountID(of: record.owner, in: db)
            record.state = .uploading
            let taken = try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM uploads WHERE id = ?)"), arguments: [record.id])
            if taken == true { return .alreadyUsed }
            if dailyQuota > 0 || totalQuota > 0 {
                // Read and insert in one write transaction: two PUTs of one account cannot both
                // pass a quota that only one of them fits in.
                let dayAgo = Self.milliseconds(record.createdAt.addingTimeInterval(-86_400))
                let row = try Row.fetchOne(
                    db.cachedStatement(
                        sql: """
                            SELECT COALESCE(SUM(CASE WHEN created_at >= ? THEN size ELSE 0 END), 0),
                                   COALESCE(SUM(CASE WHEN state <> 'pending' THEN size ELSE 0 END), 0),
                                   MIN(CASE WHEN created_at >= ? THEN created_at END)
                            FROM uploads WHERE account_id = ?
                            """),
                    arguments: [dayAgo, dayAgo, record.accountID])
                let recent: Int64 = row?[0] ?? 0, stored: Int64 = row?[1] ?? 0
                if dailyQuota > 0, recent + record.size > dailyQuota {
                    let oldest: Int64? = row?[2]
                    return .overDailyQuota(oldest: oldest.map(Self.date(milliseconds:)) ?? record.createdAt)
                }
                if totalQuota > 0, stored + record.size > totalQuota { return .overTotalQuota }
            }
            try Self.insert(record, in: db)
            return .claimed(record)
        }
    }

    public func transitionUpload(id: String, from: UploadRecord.State, to: UploadRecord.State) async throws -> Bool {
        try await pool.write { db in
            try db.cachedStatement(sql: "UPDATE uploads SET state = ? WHERE id = ? AND state = ?")
                .execute(arguments: [to.rawValue, id, from.rawValue])
            return db.changesCount == 1
        }
    }

    public func uploads(of owner: String) async throws -> [UploadRecord] {
        try await pool.read { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT \(Self.columns) FROM uploads JOIN accounts ON accounts.id = uploads.account_id
                        WHERE accounts.username = ? ORDER BY uploads.created_at, uploads.id
                        """),
                arguments: [owner]
            ).map(Self.record)
        }
    }

    public func deleteUploads(ids: [String]) async throws -> [UploadRecord] {
        guard !ids.isEmpty else { return [] }
        return try await pool.write { db in
            var deleted: [UploadRecord] = []
            for id in ids {
                guard
                    let row = try Row.fetchOne(
                        db.cachedStatement(
                            sql: "SELECT \(Self.columns) FROM uploads JOIN accounts ON accounts.id = uploads.account_id WHERE uploads.id = ?"),
                        arguments: [id])
                else { continue }
                try db.execute(sql: "DELETE FROM uploads WHERE id = ?", arguments: [id])
                deleted.append(Self.record(row))
            }
            return deleted
        }
    }

    public func uploads(createdBefore date: Date, limit: Int) async throws -> [UploadRecord] {
        try await pool.read { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT \(Self.columns) FROM uploads JOIN accounts ON accounts.id = uploads.account_id
                        WHERE uploads.created_at < ? ORDER BY uploads.created_at LIMIT ?
                        """),
                arguments: [Self.milliseconds(date), limit]
            ).map(Self.record)
        }
    }

    private static func insert(_ record: UploadRecord, in db: Database) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO uploads (id, account_id, filename, size, content_type, created_at, state)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(
            arguments: [
                record.id, record.accountID, record.filename, record.size, record.contentType,
                milliseconds(record.createdAt), record.state.rawValue,
            ])
    }

    private static func record(_ row: Row) -> UploadRecord {
        UploadRecord(
            id: row[0], owner: row[1], accountID: row[2], filename: row[3], size: row[4], contentType: row[5],
            createdAt: date(milliseconds: row[6]), state: UploadRecord.State(rawValue: row[7]) ?? .pending)
    }
}
