import Foundation
import GRDB

/// The short reads a login waits for (point lookups by username: an account's keys, a
/// roster, a vCard's photo hash, the first offline messages), run with GRDB's synchronous API
/// on a few serial queues of our own instead of its `async` one.
///
/// GRDB's `async` read hops four times between threads: to its semaphore's queue, back to
/// Swift's executor, to the reader's queue, back again. Here a read hops once to a queue
/// (where the pool's semaphore and the reader's `sync` run on the same thread) and once back
/// to the caller; the callback form hands the result over on the queue's thread, so a
/// caller on an event loop pays one hop each way and no Swift task at all. A login made six
/// such trips, and the wake-ups were about a quarter of its CPU (bench/README.md, "SCRAM
/// logins", fifth round).
///
/// Only for reads that take microseconds: a queue runs one read at a time, so a long one
/// (an archive query) would hold up the reads assigned behind it. There are as many queues as
/// reader connections, so a read never waits on the pool's semaphore for another quick read.
final class QuickReads: @unchecked Sendable {
    private let pool: DatabasePool
    private let queues: [DispatchQueue]
    private let lock = NSLock()
    /// Guarded by `lock`: the queue the next read goes to.
    private var next = 0

    init(pool: DatabasePool, queues count: Int) {
        self.pool = pool
        queues = (0..<max(1, count)).map { DispatchQueue(label: "parley.sqlite.quick-read.\($0)") }
    }

    /// Runs `body` in a read transaction and calls `completion` with its outcome, on a
    /// thread of this object's (never the caller's).
    func read<T>(_ body: @escaping @Sendable (Database) throws -> T, completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        let queue = lock.withLock {
            defer { next = next + 1 == queues.count ? 0 : next + 1 }
            return queues[next]
        }
        queue.async { [pool] in
            completion(Result { try pool.read(body) })
        }
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            read(body) { continuation.resume(with: $0) }
        }
    }
}
