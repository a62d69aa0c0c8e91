import Dispatch
import GRDB
@testable import ParleyStorage

/// Holds the server's SQLite writer, as a slow disk would: every write the server starts
/// meanwhile (archive, offline) waits until `release()`, so a scenario can see what the
/// server does before anything is committed.
final class DatabaseWriteLock: Sendable {
    private let gate = DispatchSemaphore(value: 0)
    private let holding: Task<Void, Never>

    static func hold(_ storage: any ServerStorage) async -> DatabaseWriteLock {
        let taken = AsyncStream<Void>.makeStream()
        let lock = DatabaseWriteLock(storage as! SQLiteStorage, taken: taken.continuation)
        for await _ in taken.stream { break }
        return lock
    }

    private init(_ storage: SQLiteStorage, taken: AsyncStream<Void>.Continuation) {
        let gate = gate
        holding = Task.detached {
            // Runs on GRDB's writer queue, not a Swift concurrency thread, so blocking it is fine.
            try? await storage.pool.write { _ in
                taken.yield()
                gate.wait()
            }
        }
    }

    func release() async {
        gate.signal()
        await holding.value
    }
}
