import Foundation
import GRDB

/// Group commit for small writes that each must be a transaction of their own (roster
/// changes, the last logout): writes that arrive while a transaction is being written wait
/// in a queue and go into the next SQLite transaction together, each in a savepoint. A
/// subscription handshake is eight roster transactions (both sides of four presence
/// stanzas); under load, many users' handshakes and logouts then share one commit, one fsync
/// and one trip to the writer queue instead of paying each (bench/README.md, "Roster
/// handshakes").
///
/// Writes are applied in arrival order, so a later one sees an earlier one's changes. Each
/// caller gets its result only once the transaction holding its changes has committed. A
/// body that throws rolls back its own savepoint and fails alone; an error that ends the
/// SQLite transaction (or a failed commit) fails the whole batch, none of which was committed.
final class GroupedWrites: @unchecked Sendable {
    private struct Request: Sendable {
        /// Runs the caller's body inside the open transaction; keeps its result for `complete`.
        let apply: @Sendable (Database) throws -> Void
        /// With nil once committed, or with the error that kept it from being committed.
        let complete: @Sendable ((any Error)?) -> Void
    }

    private let pool: DatabasePool
    private let batchLimit: Int
    /// Where the batches are written, one after another.
    private let writerQueue = DispatchQueue(label: "parley.sqlite.grouped-writes")
    private let lock = NSLock()
    /// Guarded by `lock`.
    private var queue: [Request] = []
    /// Guarded by `lock`: a writer task is running and will look at `queue` again.
    private var writing = false
    /// Guarded by `lock`: transactions written, for tests.
    private var batches = 0

    init(pool: DatabasePool, batchLimit: Int) {
        self.pool = pool
        self.batchLimit = max(batchLimit, 1)
    }

    /// Runs `body` in the next batch and returns its result once that batch has committed.
    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let result = ResultBox<T>()
            enqueue(
                Request(
                    apply: { db in result.value = try body(db) },
                    complete: { error in
                        if let error {
                            continuation.resume(throwing: error)
                        } else if let value = result.value {
                            continuation.resume(returning: value)
                        } else {
                            continuation.resume(throwing: StorageError.invalidArgument("a grouped write ended without a result"))
                        }
                    }))
        }
    }

    /// How many transactions have been written, committed or not.
    var batchCount: Int { lock.withLock { batches } }

    private func enqueue(_ request: Request) {
        let startWriter = lock.withLock {
            queue.append(request)
            if writing { return false }
            writing = true
            return true
        }
        // GRDB's synchronous API on a queue of our own: its `async` write hops from a task to
        // the writer's queue and back, one more wake-up per batch (a login's logout is one).
        if startWriter { writerQueue.async { self.drain() } }
    }

    private func drain() {
        while let batch = nextBatch() {
            var outcomes: [(any Error)?]
            do {
                outcomes = try pool.write { db in try Self.apply(batch, in: db) }
            } catch {
                outcomes = Array(repeating: error, count: batch.count)
            }
            for (request, outcome) in zip(batch, outcomes) { request.complete(outcome) }
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
            let count = min(queue.count, batchLimit)
            let batch = Array(queue.prefix(count))
            queue.removeFirst(count)
            return batch
        }
    }

    private static func apply(_ batch: [Request], in db: Database) throws -> [(any Error)?] {
        // Alone in its transaction, a write needs no savepoint: its error rolls back everything.
        if batch.count == 1 {
            try batch[0].apply(db)
            return [nil]
        }
        return try batch.map { request -> (any Error)? in
            do {
                try db.inSavepoint {
                    try request.apply(db)
                    return .commit
                }
                return nil
            } catch {
                // Some errors (a full disk, I/O) make SQLite roll back the whole transaction:
                // then nothing in this batch can commit.
                guard db.isInsideTransaction else { throw error }
                return error
            }
        }
    }
}

/// A body's result, written inside the transaction and read once it has committed.
private final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}
