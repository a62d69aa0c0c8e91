import Foundation
import Logging
import ParleyStorage
import PostgresNIO

/// Group commit for offline messages and archive batches, as `OfflineGroupCommit` does it for
/// SQLite: requests that arrive while a transaction is being written wait in a queue and go
/// into the next transaction together (up to `batchLimit`), so concurrent callers share one
/// commit and its WAL flush. A message to an offline account is both stored offline and
/// archived: with the two in one queue, it costs one commit, not two.
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

    private static func apply(
        _ batch: [Request], at date: Date, _ connection: PostgresConnection, logger: Logger
    ) async throws -> [Result<Int64, any Error>] {
        var accountIDs: [String: Int64?] = [:]
        // Messages each account holds, counting those stored earlier in this batch.
        var counts: [Int64: Int] = [:]
        let now = Milliseconds.from(date)
        var results: [Result<Int64, any Error>] = []
        for request in batch {
            if case .archive(let entries, let maxPerUser) = request.operation {
                try await PostgresStorage.writeArchive(entries, maxPerUser: maxPerUser, connection, logger: logger)
                results.append(.success(0))
                continue
            }
            let accountID: Int64?
            if let known = accountIDs[request.user] {
                accountID = known
            } else {
                accountID = try await connection.accountID(of: request.user, lock: true, logger: logger)
                accountIDs[request.user] = accountID
            }
            switch request.operation {
            case .store(let stanza, let quota):
                guard let accountID else {
                    results.append(.failure(StorageError.accountNotFound(username: request.user)))
                    continue
                }
                let stored: Int
                if let known = counts[accountID] {
                    stored = known
                } else {
                    stored = Int(
                        try await connection.value(
                            "SELECT COUNT(*) FROM offline_messages WHERE account_id = \(accountID)", as: Int64.self, logger: logger) ?? 0)
                }
                guard stored < quota else {
                    counts[accountID] = stored
                    results.append(.failure(StorageError.quotaExceeded(limit: quota)))
                    continue
                }
                let id = try await connection.value(
                    "INSERT INTO offline_messages (account_id, stanza, stored_at) VALUES (\(accountID), \(stanza), \(now)) RETURNING id",
                    as: Int64.self, logger: logger)
                counts[accountID] = stored + 1
                results.append(.success(id ?? 0))

            case .delete(let ids):
                if let accountID {
                    try await connection.run(
                        "DELETE FROM offline_messages WHERE account_id = \(accountID) AND id = ANY(\(ids))", logger: logger)
                    counts[accountID] = nil
                }
                results.append(.success(0))

            case .archive:
                results.append(.success(0))  // written above
            }
        }
        return results
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
