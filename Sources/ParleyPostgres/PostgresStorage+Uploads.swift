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
            guard let accountID = try await connection.accountID(of: owner, logger: logger) else {
                throw StorageError.accountNotFound(username: owner)
            }
            guard
                let row = try await connection.rows(
                    """
                    SELECT COALESCE(SUM(CASE WHEN created_at >= \(since) THEN size ELSE 0 END), 0)::BIGINT,
                           COALESCE(SUM(CASE WHEN state = 'stored' THEN size ELSE 0 END), 0)::BIGINT
                    FROM uploads WHERE account_id = \(accountID)
                    """, logger: logger
                ).first
            else { return (0, 0) }
            let (recent, stored) = try row.decode((Int64, Int64).self)
            return (recent, stored)
        }
    }

    public func claimUpload(_ record: UploadRecord, dailyQuota: Int64, totalQuota: Int64) async throws -> UploadClaim {
        let logger = logger
        return try await transaction { connection in
            var record = record
            record.accountID = try await connection.existingAccountID(of: record.owner, logger: logger)
            record.state = .uploading
            let taken = try await connection.value("SELECT EXISTS (SELECT 1 FROM uploads WHERE id = \(record.id))", as: Bool.self, logger: logger)
            if taken == true { return .alreadyUsed }
            if dailyQuota > 0 || totalQuota > 0 {
                // Under READ COMMITTED two PUTs of one account would both read the sums before
                // either inserts; the account row's NO KEY UPDATE lock makes them take turns
                // (it leaves the KEY SHARE locks of other writers alone), and the sums below
                // are read after it, so they see the other's committed row.
                try await connection.run("SELECT id FROM accounts WHERE id = \(record.accountID) FOR NO KEY UPDATE", logger: logger)
                let dayAgo = Milliseconds.from(record.createdAt.addingTimeInterval(-86_400))
                let row = try await connection.rows(
                        """
                        SELECT COALESCE(SUM(CASE WHEN created_at >= \(dayAgo) THEN size ELSE 0 END), 0)::BIGINT,
                               COALESCE(SUM(CASE WHEN state <> 'pending' THEN size ELSE 0 END), 0)::BIGINT,
                               MIN(CASE WHEN created_at >= \(dayAgo) THEN created_at END)
                        FROM uploads WHERE account_id = \(record.accountID)
                        """, logger: logger
                    ).first
                let (recent, stored, oldest): (Int64, Int64, Int64?) = try row?.decode((Int64, Int64, Int64?).self) ?? (0, 0, nil)
                if dailyQuota > 0, recent + record.size > dailyQuota {
                    return .overDailyQuota(oldest: oldest.map(Milliseconds.date) ?? record.createdAt)
                }
                if totalQuota > 0, stored + record.size > totalQuota { return .overTotalQuota }
            }
            // A PUT of the same slot racing this one: ON CONFLICT makes the loser's insert empty
            // instead of an error.
            let inserted = try await connection.rows(
                """
                INSERT INTO uploads (id, account_id, filename, size, content_type, created_at, state)
                VALUES (\(record.id), \(record.accountID), \(record.filename), \(record.size), \(record.contentType),
                    \(Milliseconds.from(record.createdAt)), \(record.state.rawValue))
                ON CONFLICT (id) DO NOTHING RETURNING id
                """, logger: logger)
            return inserted.isEmpty ? .alreadyUsed : .claimed(record)
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
