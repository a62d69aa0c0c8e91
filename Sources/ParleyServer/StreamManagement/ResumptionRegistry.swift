import NIOConcurrencyHelpers

/// Resumable sessions by their XEP-0198 id, and a bounded memory of recently ended ones, so
/// a late `<resume/>` learns the final `h` in its `<failed/>` (XEP-0198 §5).
final class ResumptionRegistry: Sendable {
    struct Tombstone: Sendable {
        var user: String
        var h: UInt32
        /// Archive rows of messages counted in `h` not yet seen committed: the `h` is reported
        /// only once they are, and not at all if they could not be stored.
        var archive: ClosedRange<UInt64>?
        /// The account the session belonged to: a new account with the same name is not it.
        var accountID: Int64? = nil
    }

    private struct State {
        var live: [String: BoundSession] = [:]
        var ended: [String: Tombstone] = [:]
        var endedOrder: [String] = []
    }

    static let maxTombstones = 4096
    private let state = NIOLockedValueBox(State())

    func register(_ id: String, _ session: BoundSession) {
        state.withLockedValue { $0.live[id] = session }
    }

    func session(_ id: String) -> BoundSession? {
        state.withLockedValue { $0.live[id] }
    }

    func tombstone(_ id: String) -> Tombstone? {
        state.withLockedValue { $0.ended[id] }
    }

    func remove(_ id: String, tombstone: Tombstone) {
        state.withLockedValue { state in
            guard state.live.removeValue(forKey: id) != nil else { return }
            state.ended[id] = tombstone
            state.endedOrder.append(id)
            if state.endedOrder.count > Self.maxTombstones {
                let dropped = state.endedOrder.prefix(state.endedOrder.count - Self.maxTombstones / 2)
                for old in dropped { state.ended[old] = nil }
                state.endedOrder.removeFirst(dropped.count)
            }
        }
    }

    /// The session moved to another node of the cluster: no tombstone, so a later `<resume/>`
    /// here asks the cluster again rather than learning a final `h` that is no longer final.
    func forget(_ id: String, _ session: BoundSession) {
        state.withLockedValue { state in
            if state.live[id] === session { state.live[id] = nil }
        }
    }

    var all: [BoundSession] {
        state.withLockedValue { Array($0.live.values) }
    }
}
