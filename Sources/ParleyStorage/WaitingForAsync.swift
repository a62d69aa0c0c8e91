import Foundation

/// Runs `body` in a task and blocks the calling thread until it ends: for a thread of the
/// caller's own that has nothing else to do meanwhile. Never call it on an event loop or in
/// the concurrency pool, whose threads the task itself may need.
public func waitingForAsync<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let outcome = OutcomeBox<T>()
    let done = DispatchSemaphore(value: 0)
    Task {
        do {
            outcome.result = .success(try await body())
        } catch {
            outcome.result = .failure(error)
        }
        done.signal()
    }
    done.wait()
    // The semaphore orders the task's write before this read.
    return try outcome.result!.get()
}

private final class OutcomeBox<T>: @unchecked Sendable {
    var result: Result<T, any Error>?
}
