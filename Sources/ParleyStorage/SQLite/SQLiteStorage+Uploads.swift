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
            // Cached: a slot request's one write, parsed once rather than per slot.
            try db.cachedStatement(
                sql: """
                    INSERT INTO uploads (id, account_id, filename, size, content_type, created_at, state)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """
            ).execute(
                arguments: [
                    record.id, record.accountID, record.filename, record.size, record.contentType,
                    Self.milliseconds(record.createdAt), record.state.rawValue,
                ])
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
            let row = try Row.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT COALESCE(SUM(CASE WHEN uploads.created_at >= ? THEN uploads.size ELSE 0 END), 0) AS recent,
                               COALESCE(SUM(CASE WHEN uploads.state = 'stored' THEN uploads.size ELSE 0 END), 0) AS stored
                        FROM uploads JOIN accounts ON accounts.id = uploads.account_id WHERE accounts.username = ?
                        """),
                arguments: [Self.milliseconds(date), owner])
            return (row?["recent"] ?? 0, row?["stored"] ?? 0)
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

    private static func record(_ row: Row) -> UploadRecord {
        UploadRecord(
            id: row[0], owner: row[1], accountID: row[2], filename: row[3], size: row[4], contentType: row[5],
            createdAt: date(milliseconds: row[6]), state: UploadRecord.State(rawValue: row[7]) ?? .pending)
    }
}
