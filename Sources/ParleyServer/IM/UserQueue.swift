import NIOConcurrencyHelpers

/// Runs async work for one user strictly in order, and work for different users in
/// parallel. Presence handling reads and writes storage; without this, two presence stanzas
/// of one session could overtake each other.
final class UserQueue: Sendable {
    private struct State {
        /// Each user's last task, with the ticket that tells it from a later one.
        var tails: [String: (task: Task<Void, Never>, ticket: UInt64)] = [:]
        var nextTicket: UInt64 = 0
    }

    private let state = NIOLockedValueBox(State())
    private static let keptCapacity = 64

    @discardableResult
    func enqueue(_ user: String, _ work: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
        state.withLockedValue { state in
            let previous = state.tails[user]?.task
            state.nextTicket &+= 1
            let ticket = state.nextTicket
            let task = Task { [box = self.state] in
                await previous?.value
                await work()
                // Drop the entry once nothing is queued behind this task, so idle users cost
                // nothing. The task does it itself (it cannot finish before this `enqueue`
                // lets go of the lock): a second task per enqueue waiting for the first cost
                // a task and a thread wake-up, several per login.
                box.withLockedValue { state in
                    if state.tails[user]?.ticket == ticket { state.tails[user] = nil }
                    // A burst (a room filling: every newcomer's presence) grew the table;
                    // emptied, it gives that back instead of keeping it for good.
                    if state.tails.isEmpty, state.tails.capacity > Self.keptCapacity { state.tails = [:] }
                }
            }
            state.tails[user] = (task, ticket)
            return task
        }
    }
}
