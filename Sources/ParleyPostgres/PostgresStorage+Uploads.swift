import Foundation
import ParleyStorage
import PostgresNIO

extension PostgresStorage: UploadMetadataStore {
    private static let columns = """
        uploads.id, accounts.username, uploads.account_id, uploads.filename, uploads.size,
        uploads.content_type, uploads.created_at, uploads.state
        """

    public func insertUpload(_ record: UploadRecord) async throws -> UploadRecord {
        let logger = logger
        return try await transaction { connection in
            var record = record
            record.accountID = try await connection.existingAccountID(of: record.owner, logger: logger)
            try await connection.run(
                """
                INSERT INTO uploads (id, account_id, filename, size, content_type, created_at, state)
                VALUES (\(record.id), \(record.accountID), \(record.filename), \(record.size), \(record.contentType),
                    \(Milliseconds.from(record.createdAt)), \(record.state.rawValue))
                """, logger: logger)
            return record
        }
    }

    public func upload(id: String) async throws -> UploadRecord? {
        let logger = logger
        return try await read { connection in
            try await connection.rows(
                """
                SELECT \(unescaped: Self.columns) FROM uploads JOIN accounts ON accounts.id = uploads.account_id
                WHERE uploads.id = \(id)
                """, logger: logger
            ).first.map(Self.record)
        }
    }

    public func uploadUsage(of owner: String, since date: Date) async throws -> (recent: Int64, stored: Int64) {
        let logger = logger
        let since = Milliseconds.from(date)
        return try await read { connection in
            guard
                let row = try await connection.rows(
                    """
                    SELECT COALESCE(SUM(CASE WHEN uploads.created_at >= \(since) THEN uploads.size ELSE 0 END), 0)::BIGINT,
                           COALESCE(SUM(CASE WHEN uploads.state = 'stored' THEN uploads.size ELSE 0 END), 0)::BIGINT
                    FROM uploads JOIN accounts ON accounts.id = uploads.account_id WHERE accounts.username = \(owner)
                    """, logger: logger
                ).first
            else { return (0, 0) }
            let (recent, stored) = try row.decode((Int64, Int64).self)
            return (recent, stored)
        }
    }

    public func transitionUpload(id: String, from: UploadRecord.State, to: UploadRecord.State) async throws -> Bool {
        let logger = logger
        return try await transaction { connection in
            try await connection.rows(
                "UPDATE uploads SET state = \(to.rawValue) WHERE id = \(id) AND state = \(from.rawValue) RETURNING id", logger: logger
            ).count == 1
        }
    }

    public func uploads(of owner: String) async throws -> [UploadRecord] {
        let logger = logger
        return try await read { connection in
            try await connection.rows(
                """
                SELECT \(unescaped: Self.columns) FROM uploads JOIN accounts ON accounts.id = uploads.account_id
                WHERE accounts.username = \(owner) ORDER BY uploads.created_at, uploads.id
                """, logger: logger
            ).map(Self.record)
        }
    }

    public func deleteUploads(ids: [String]) async throws -> [UploadRecord] {
        guard !ids.isEmpty else { return [] }
        let logger = logger
        return try await transaction { connection in
            let rows = try await connection.rows(
                """
                SELECT \(unescaped: Self.columns) FROM uploads JOIN accounts ON accounts.id = uploads.account_id
                WHERE uploads.id = ANY(\(ids)) FOR UPDATE OF uploads
                """, logger: logger)
            try await connection.run("DELETE FROM uploads WHERE id = ANY(\(ids))", logger: logger)
            let byID = Dictionary(try rows.map(Self.record).map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            return ids.compactMap { byID[$0] }
        }
    }

    public func uploads(createdBefore date: Date, limit: Int) async throws -> [UploadRecord] {
        let logger = logger
        let before = Milliseconds.from(date)
        return try await read { connection in
            try await connection.rows(
                """
                SELECT \(unescaped: Self.columns) FROM uploads JOIN accounts ON accounts.id = uploads.account_id
                WHERE uploads.created_at < \(before) ORDER BY uploads.created_at LIMIT \(Int64(max(limit, 0)))
                """, logger: logger
            ).map(Self.record)
        }
    }

    private static func record(_ row: PostgresRow) throws -> UploadRecord {
        let (id, owner, accountID, filename, size, contentType, createdAt, state) = try row.decode(
            (String, String, Int64, String, Int64, String, Int64, String).self)
        return UploadRecord(
            id: id, owner: owner, accountID: accountID, filename: filename, size: size, contentType: contentType,
            createdAt: Milliseconds.date(createdAt), state: UploadRecord.State(rawValue: state) ?? .pending)
    }
}
