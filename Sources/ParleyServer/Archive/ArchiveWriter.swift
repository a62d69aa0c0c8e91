import Logging
import NIOConcurrencyHelpers
import ParleyStorage

/// Hands archive entries to the store in the order they were routed (server order): one
/// writer drains the queue and submits each batch as one transaction. Queries first wait
/// for everything routed before them, so a client always finds what it just sent.
final class ArchiveWriter: Sendable {
    private struct State {
        var pending: [ArchiveEntry] = []
        var writing = false
        var enqueued: UInt64 = 0
        var written: UInt64 = 0
        var waiters: [(UInt64, CheckedContinuation<Void, Never>)] = []
    }

    private let store: any ArchiveStore
    private let maxPerUser: Int?
    private let logger: Logger
    private let state = NIOLockedValueBox(State())

    init(store: any ArchiveStore, maxPerUser: Int?, logger: Logger) {
        self.store = store
        self.maxPerUser = maxPerUser
        self.logger = logger
    }

    func enqueue(_ entries: [ArchiveEntry]) {
        guard !entries.isEmpty else { return }
        let start = state.withLockedValue { state -> Bool in
            state.pending.append(contentsOf: entries)
            state.enqueued += UInt64(entries.count)
            if state.writing { return false }
            state.writing = true
            return true
        }
        if start { Task { await drain() } }
    }

    /// Returns once every entry enqueued before the call was handed to the store.
    func flush() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLockedValue { state -> Bool in
                if state.written >= state.enqueued { return true }
                state.waiters.append((state.enqueued, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Shutdown: waits until everything accepted so far was handed to the store.
    func waitUntilIdle(deadline: ContinuousClock.Instant) async {
        while state.withLockedValue({ $0.written < $0.enqueued }), ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    private func drain() async {
        while true {
            let batch = state.withLockedValue { state -> [ArchiveEntry] in
                let batch = Array(state.pending.prefix(512))
                state.pending.removeFirst(batch.count)
                if batch.isEmpty { state.writing = false }
                return batch
            }
            if batch.isEmpty { return }
            do {
                try await store.archive(batch, maxPerUser: maxPerUser)
            } catch {
                logger.error("messages not archived", metadata: ["count": "\(batch.count)", "error": "\(error)"])
            }
            let ready = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
                state.written += UInt64(batch.count)
                let written = state.written
                let ready = state.waiters.filter { $0.0 <= written }.map(\.1)
                state.waiters.removeAll { $0.0 <= written }
                return ready
            }
            for continuation in ready { continuation.resume() }
        }
    }
}
