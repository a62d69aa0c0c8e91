import Foundation
import GRDB

/// Group commit for offline messages and archive batches: stores, deletions and archive
/// batches that arrive while a transaction is being written wait in a queue and go into the
/// next transaction together (up to `batchLimit` requests), so many concurrent callers share
/// one commit and its fsync instead of queueing for one each. A message to an offline account
/// is both stored offline and archived: with the two in one queue, it costs one commit, not two.
///
/// One writer task at a time drains the queue; it exists only while there is work. Requests are
/// applied in arrival order, so one caller's messages get increasing ids. A request that fails
/// on its own (quota, unknown user) fails alone; an error of the database fails the whole batch,
/// none of which was committed.
final class OfflineGroupCommit: @unchecked Sendable {
    enum Operation: Sendable {
        case store(stanza: String, quota: Int)
        case delete(ids: [Int64])
        /// Rows for the archive (`SQLiteStorage.writeArchive`), in their order.
        case archive(entries: [ArchiveEntry], maxPerUser: Int?)
    }

    private struct Request: Sendable {
        let user: String
        let operation: Operation
        let complete: @Sendable (Result<Int64, any Error>) -> Void
    }

    private let pool: DatabasePool
    private let batchLimit: Int
    private let options: SQLiteStorage.Options
    private let lock = NSLock()
    /// Guarded by `lock`.
    private var queue: [Request] = []
    /// Guarded by `lock`: a writer task is running and will look at `queue` again.
    private var writing = false
    /// Guarded by `lock`: transactions written, for tests and metrics.
    private var batches = 0

    init(pool: DatabasePool, options: SQLiteStorage.Options) {
        self.pool = pool
        self.options = options
        self.batchLimit = max(options.offlineBatchLimit, 1)
    }

    /// Applies `operation` in the next batch and returns once that batch has committed: the
    /// new message's id for a store, 0 for a deletion.
    func submit(user: String, _ operation: Operation) async throws -> Int64 {
        try await withCheckedThrowingContinuation { continuation in
            enqueue([Request(user: user, operation: operation) { continuation.resume(with: $0) }])
        }
    }

    /// Applies several operations in the given order (they stay adjacent in the queue, so no
    /// other caller's request can come between them) and returns each one's outcome.
    func submitAll(_ operations: [(user: String, operation: Operation)]) async -> [Result<Int64, any Error>] {
        guard !operations.isEmpty else { return [] }
        return await withCheckedContinuation { continuation in
            let collector = ResultCollector(count: operations.count) { continuation.resume(returning: $0) }
            enqueue(operations.enumerated().map { index, item in
                Request(user: item.user, operation: item.operation) { collector.set(index, $0) }
            })
        }
    }

    private func enqueue(_ requests: [Request]) {
        let startWriter = lock.withLock {
            queue.append(contentsOf: requests)
            if writing { return false }
            writing = true
            return true
        }
        if startWriter {
            Task.detached { await self.drain() }
        }
    }

    /// How many transactions have been written, committed or not.
    var batchCount: Int { lock.withLock { batches } }

    private func drain() async {
        while let batch = nextBatch() {
            let results: [Result<Int64, any Error>]
            do {
                let date = Date()
                results = try await pool.write { [options] db in try Self.apply(batch, at: date, options: options, in: db) }
            } catch {
                results = Array(repeating: .failure(error), count: batch.count)
            }
            for (request, result) in zip(batch, results) {
                request.complete(result)
            }
        }
    }

    /// The oldest requests, up to `batchLimit`; nil (and the writer ends) when there are none.
    private func nextBatch() -> [Request]? {
        lock.withLock {
            if queue.isEmpty {
                writing = false
                return nil
            }
            batches += 1
            if queue.count <= batchLimit {
                defer { queue = [] }
                return queue
            }
            let batch = Array(queue.prefix(batchLimit))
            queue.removeFirst(batchLimit)
            return batch
        }
    }

    private static func apply(
        _ batch: [Request], at date: Date, options: SQLiteStorage.Options, in db: Database
    ) throws -> [Result<Int64, any Error>] {
        var accountIDs: [String: Int64?] = [:]
        // Messages each account holds, counting those stored earlier in this batch.
        var counts: [Int64: Int] = [:]
        var insert = SQLiteRowInsert(
            try db.cachedStatement(sql: "INSERT INTO offline_messages (account_id, stanza, stored_at) VALUES (?, ?, ?)"))
        // As GRDB stores a Date, made once: its DateFormatter per row was most of a stored
        // message's cost on this thread outside SQLite (bench/README.md, issue 17).
        let storedAt = String.fromDatabaseValue(date.databaseValue)
        let count = try db.cachedStatement(sql: "SELECT COUNT(*) FROM offline_messages WHERE account_id = ?")

        return try batch.map { request -> Result<Int64, any Error> in
            if case .archive(let entries, let maxPerUser) = request.operation {
                try SQLiteStorage.writeArchive(entries, maxPerUser: maxPerUser, options: options, in: db)
                return .success(0)
            }
            let accountID: Int64?
            if let known = accountIDs[request.user] {
                accountID = known
            } else {
                accountID = try SQLiteStorage.accountID(of: request.user, in: db)
                accountIDs[request.user] = accountID
            }

            switch request.operation {
            case .store(let stanza, let quota):
                guard let accountID else { return .failure(StorageError.accountNotFound(username: request.user)) }
                let stored: Int
                if let known = counts[accountID] {
                    stored = known
                } else {
                    stored = try Int.fetchOne(count, arguments: [accountID]) ?? 0
                }
                guard stored < quota else {
                    counts[accountID] = stored
                    return .failure(StorageError.quotaExceeded(limit: quota))
                }
                insert.bind(accountID)
                insert.bind(stanza)
                insert.bind(storedAt)
                try insert.execute(in: db)
                counts[accountID] = stored + 1
                return .success(db.lastInsertedRowID)

            case .delete(let ids):
                guard let accountID else { return .success(0) }
                // Well under SQLite's limit on bound parameters per statement.
                for start in stride(from: 0, to: ids.count, by: 500) {
                    let chunk = ids[start..<min(start + 500, ids.count)]
                    let placeholders = Array(repeating: "?", count: chunk.count).joined(separator: ",")
                    try db.execute(
                        sql: "DELETE FROM offline_messages WHERE account_id = ? AND id IN (\(placeholders))",
                        arguments: StatementArguments([accountID] + chunk.map { $0 as any DatabaseValueConvertible }))
                }
                counts[accountID] = nil
                return .success(0)

            case .archive:
                return .success(0)  // written above
            }
        }
    }
}

/// Gathers the outcomes of a batch submitted together and reports them all at once.
private final class ResultCollector: @unchecked Sendable {
    private let lock = NSLock()
    private var results: [Result<Int64, any Error>?]
    private var remaining: Int
    private let done: @Sendable ([Result<Int64, any Error>]) -> Void

    init(count: Int, done: @escaping @Sendable ([Result<Int64, any Error>]) -> Void) {
        results = Array(repeating: nil, count: count)
        remaining = count
        self.done = done
    }

    func set(_ index: Int, _ result: Result<Int64, any Error>) {
        let finished: [Result<Int64, any Error>]? = lock.withLock {
            results[index] = result
            remaining -= 1
            return remaining == 0 ? results.map { $0! } : nil
        }
        if let finished { done(finished) }
    }
}
