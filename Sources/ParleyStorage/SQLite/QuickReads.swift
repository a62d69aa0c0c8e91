import Foundation
import GRDB

/// The short reads a login waits for (point lookups by username: an account's keys, a
/// roster, a vCard's photo hash, the first offline messages), each on a read-only connection
/// of its own with a serial queue of its own, through GRDB's synchronous API.
///
/// GRDB's `async` read hops four times between threads: to its semaphore's queue, back to
/// Swift's executor, to the reader's queue, back again. Here a read hops once to a queue and
/// once back to the caller; the callback form hands the result over on the queue's thread,
/// so a caller on an event loop pays one hop each way and no Swift task at all. These
/// connections are not the pool's: taking a reader from GRDB's pool goes through dispatch
/// barriers that several threads at once contend for (futex waits and context switches,
/// measured), while each connection here is only ever used by its one queue. A login made six
/// storage trips, and the wake-ups were about a quarter of its CPU (bench/README.md, "SCRAM
/// logins", fifth round).
///
/// Only for reads that take microseconds: a queue runs one read at a time, so a long one (an
/// archive query) would hold up the reads behind it.
final class QuickReads: @unchecked Sendable {
    private let connections: [(queue: DispatchQueue, database: DatabaseQueue)]
    private let lock = NSLock()
    /// Guarded by `lock`: the connection the next read goes to.
    private var next = 0

    /// Opens `count` read-only connections to the (already migrated, WAL) database at `path`.
    init(path: String, configuration: Configuration, count: Int) throws {
        var configuration = configuration
        configuration.readonly = true
        connections = try (0..<max(1, count)).map { index in
            (DispatchQueue(label: "parley.sqlite.quick-read.\(index)"), try DatabaseQueue(path: path, configuration: configuration))
        }
    }

    /// Runs `body` in a read transaction and calls `completion` with its outcome, on a
    /// thread of this object's (never the caller's).
    func read<T>(_ body: @escaping @Sendable (Database) throws -> T, completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        let connection = lock.withLock {
            defer { next = next + 1 == connections.count ? 0 : next + 1 }
            return connections[next]
        }
        connection.queue.async {
            completion(Result { try connection.database.read(body) })
        }
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            read(body) { continuation.resume(with: $0) }
        }
    }
}
