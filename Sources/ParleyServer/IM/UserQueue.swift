import NIOConcurrencyHelpers

/// Runs async work for one user strictly in order, and work for different users in
/// parallel. Presence handling reads and writes storage; without this, two presence stanzas
/// of one session could overtake each other.
final class UserQueue: Sendable {
    private let tails = NIOLockedValueBox([String: Task<Void, Never>]())

    @discardableResult
    func enqueue(_ user: String, _ work: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
        tails.withLockedValue { tails in
            let previous = tails[user]
            let task = Task {
                await previous?.value
                await work()
            }
            tails[user] = task
            // Drop the entry once nothing is queued behind this task, so idle users cost nothing.
            Task { [weak self] in
                await task.value
                self?.tails.withLockedValue { tails in
                    if tails[user] == task { tails[user] = nil }
                }
            }
            return task
        }
    }
}
