import Foundation
import Logging
import ParleyStorage
import PostgresNIO

/// Group commit for offline messages and archive batches, as `OfflineGroupCommit` does it for
/// SQLite: requests that arrive while a transaction is being written wait in a queue and go
/// into the next transaction together (up to `batchLimit`), so concurrent callers share one
/// commit and its WAL flush. `PostgresStorage` runs two: one for the offline messages, one
/// for the archive, each on its own connection, so the two kinds commit side by side (their
/// writers each keep one batch in flight, and in one queue they took turns: two commits one
/// after the other for a message to an offline account, bench/README.md).
///
/// One writer task at a time drains the queue, in arrival order, so one caller's messages get
/// increasing ids. A request that fails on its own (quota, unknown user) fails alone; an error
/// of the database fails the whole batch, none of which was committed.
final class PostgresGroupCommit: @unchecked Sendable {
    enum Operation: Sendable {
        case store(stanza: String, quota: Int)
        case delete(ids: [Int64])
        /// Rows for the archive (`PostgresStorage.writeArchive`), in their order.
        case archive(entries: [ArchiveEntry], maxPerUser: Int?)
    }

    private struct Request: Sendable {
        let user: String
        let operation: Operation
        let complete: @Sendable (Result<Int64, any Error>) -> Void
    }

    private let client: PostgresClient
    private let batchLimit: Int
    private let logger: Logger
    private let lock = NSLock()
    /// Guarded by `lock`.
    private var queue: [Request] = []
    /// Guarded by `lock`: a writer task is running and will look at `queue` again.
    private var writing = false
    /// Guarded by `lock`: transactions written, for tests and metrics.
    private var batches = 0
    /// Guarded by `lock`: called once the queue is empty and no writer runs.
    private var idleWaiters: [CheckedContinuation<Void, Never>] = []

    init(client: PostgresClient, batchLimit: Int, logger: Logger) {
        self.client = client
        self.batchLimit = max(batchLimit, 1)
        self.logger = logger
    }

    /// Applies `operation` in the next batch and returns once that batch has committed: the
    /// new message's id for a store, 0 otherwise.
    func submit(user: String, _ operation: Operation) async throws -> Int64 {
        try await withCheckedThrowingContinuation { continuation in
            enqueue([Request(user: user, operation: operation) { continuation.resume(with: $0) }])
        }
    }

    /// Applies several operations in the given order (adjacent in the queue, so no other
    /// caller's request comes between them) and returns each one's outcome.
    func submitAll(_ operations: [(user: String, operation: Operation)]) async -> [Result<Int64, any Error>] {
        guard !operations.isEmpty else { return [] }
        let results = ResultBox(count: operations.count)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let remaining = Countdown(operations.count) { continuation.resume() }
            enqueue(operations.enumerated().map { index, item in
                Request(user: item.user, operation: item.operation) { result in
                    results.set(index, result)
                    remaining.tick()
                }
            })
        }
        return results.all
    }

    /// How many transactions have been written, committed or not.
    var batchCount: Int { lock.withLock { batches } }

    /// Returns once nothing is queued or being written.
    func waitUntilIdle() async {
        await withCheckedContinuation { continuation in
            let idle = lock.withLock {
                if !writing && queue.isEmpty { return true }
                idleWaiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
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

    private func drain() async {
        while let batch = nextBatch() {
            let results: [Result<Int64, any Error>]
            do {
                let date = Date()
                let logger = logger
                results = try await PostgresStorage.unwrapping {
                    try await client.withTransaction(logger: logger) { connection in
                        try await Self.apply(batch, at: date, connection, logger: logger)
                    }
                }
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
        let (batch, waiters): ([Request]?, [CheckedContinuation<Void, Never>]) = lock.withLock {
            if queue.isEmpty {
                writing = false
                defer { idleWaiters = [] }
                return (nil, idleWaiters)
            }
            batches += 1
            let batch = Array(queue.prefix(batchLimit))
            queue.removeFirst(batch.count)
            return (batch, [])
        }
        for waiter in waiters { waiter.resume() }
        return batch
    }

    /// The batch in a few round trips (`PostgresBatchRows`): the accounts with their archive
    /// preferences, then the offline counts, each in one query; the offline rows and the archive rows each in one INSERT
    /// (per 2,000 rows). Requests keep their order: ids increase along the batch, a quota
    /// counts the rows stored before it in the batch, and a deletion sees them.
    private static func apply(
        _ batch: [Request], at date: Date, _ connection: PostgresConnection, logger: Logger
    ) async throws -> [Result<Int64, any Error>] {
        var usernames = Set<String>()
        for request in batch {
            if case .archive(let entries, _) = request.operation {
                for entry in entries { usernames.insert(entry.owner) }
            } else {
                usernames.insert(request.user)
            }
        }
        let accounts = try await PostgresBatchRows.accounts(of: usernames, connection, logger: logger)
        let accountIDs = accounts.ids
        var storing = Set<Int64>()
        for request in batch {
            if case .store = request.operation, let id = accountIDs[request.user] { storing.insert(id) }
        }
        // Messages each account holds, counting those stored earlier in this batch; nil once
        // a deletion made it unknown.
        var counts: [Int64: Int] = try await PostgresBatchRows.offlineCounts(of: storing, connection, logger: logger)
        let now = Milliseconds.from(date)
        var results = [Result<Int64, any Error>](repeating: .success(0), count: batch.count)
        var offline = PendingOffline()
        var archive = PendingArchive()
        for (index, request) in batch.enumerated() {
            switch request.operation {
            case .archive(let entries, let maxPerUser):
                if !archive.entries.isEmpty, archive.maxPerUser != maxPerUser {
                    try await archive.write(accounts, connection, logger: logger)
                }
                archive.entries += entries
                archive.maxPerUser = maxPerUser

            case .store(let stanza, let quota):
                guard let accountID = accountIDs[request.user] else {
                    results[index] = .failure(StorageError.accountNotFound(username: request.user))
                    continue
                }
                let stored: Int
                if let known = counts[accountID] {
                    stored = known
                } else {
                    stored = try await PostgresBatchRows.offlineCounts(of: [accountID], connection, logger: logger)[accountID] ?? 0
                }
                guard stored < quota else {
                    counts[accountID] = stored
                    results[index] = .failure(StorageError.quotaExceeded(limit: quota))
                    continue
                }
                counts[accountID] = stored + 1
                offline.rows.append((accountID, stanza))
                offline.indexes.append(index)

            case .delete(let ids):
                guard let accountID = accountIDs[request.user] else { continue }
                // The recount after it must see the rows stored before it.
                try await offline.write(storedAt: now, into: &results, connection, logger: logger)
                try await connection.run(
                    "DELETE FROM offline_messages WHERE account_id = \(accountID) AND id = ANY(\(ids))", logger: logger)
                counts[accountID] = nil
            }
        }
        try await offline.write(storedAt: now, into: &results, connection, logger: logger)
        try await archive.write(accounts, connection, logger: logger)
        return results
    }
}

/// Offline messages accepted by a batch and not yet inserted, with their places in the batch.
private struct PendingOffline {
    var rows: [(accountID: Int64, stanza: String)] = []
    var indexes: [Int] = []

    mutating func write(
        storedAt: Int64, into results: inout [Result<Int64, any Error>], _ connection: PostgresConnection, logger: Logger
    ) async throws {
        guard !rows.isEmpty else { return }
        let ids = try await PostgresBatchRows.insertOffline(rows, storedAt: storedAt, connection, logger: logger)
        for (index, id) in zip(indexes, ids) { results[index] = .success(id) }
        rows = []
        indexes = []
    }
}

/// Consecutive archive requests with the same limit, written together.
private struct PendingArchive {
    var entries: [ArchiveEntry] = []
    var maxPerUser: Int?

    mutating func write(_ accounts: PostgresBatchRows.Accounts, _ connection: PostgresConnection, logger: Logger) async throws {
        guard !entries.isEmpty else { return }
        try await PostgresStorage.writeArchive(entries, maxPerUser: maxPerUser, accounts: accounts, connection, logger: logger)
        entries = []
    }
}

/// The outcomes of a batch submitted together.
private final class ResultBox: @unchecked Sendable {
    private let lock = NSLock()
    private var results: [Result<Int64, any Error>?]

    init(count: Int) { results = Array(repeating: nil, count: count) }

    func set(_ index: Int, _ result: Result<Int64, any Error>) { lock.withLock { results[index] = result } }

    var all: [Result<Int64, any Error>] { lock.withLock { results.map { $0! } } }
}

/// Calls `done` at the last of `count` ticks.
private final class Countdown: @unchecked Sendable {
    private let lock = NSLock()
    private var remaining: Int
    private let done: @Sendable () -> Void

    init(_ count: Int, done: @escaping @Sendable () -> Void) {
        remaining = count
        self.done = done
    }

    func tick() {
        let finished = lock.withLock {
            remaining -= 1
            return remaining == 0
        }
        if finished { done() }
    }
}
