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
    /// Touched only by the single drain task.
    nonisolated(unsafe) private var batchesSinceTrim = 31

    init(store: any ArchiveStore, maxPerUser: Int?, logger: Logger) {
        self.store = store
        self.maxPerUser = maxPerUser
        self.logger = logger
    }

    /// Entries waiting beyond this make `enqueue` hand back a wait, until the backlog is
    /// down to `resumeBelow`: memory stays bounded however fast clients send.
    static let highWater: UInt64 = 4096
    static let resumeBelow: UInt64 = 1024

    /// Queues entries in routing order; returns a task to wait on when the archive is behind.
    func enqueue(_ entries: [ArchiveEntry]) -> Task<Void, Never>? {
        guard !entries.isEmpty else { return nil }
        let (start, target) = state.withLockedValue { state -> (Bool, UInt64?) in
            state.pending.append(contentsOf: entries)
            state.enqueued += UInt64(entries.count)
            let behind = state.enqueued - state.written
            let target = behind > Self.highWater ? state.enqueued - Self.resumeBelow : nil
            if state.writing { return (false, target) }
            state.writing = true
            return (true, target)
        }
        if start { Task { await drain() } }
        guard let target else { return nil }
        return Task { await self.waitUntilWritten(target) }
    }

    private func waitUntilWritten(_ target: UInt64) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLockedValue { state -> Bool in
                if state.written >= target { return true }
                state.waiters.append((target, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
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

    /// Takes everything queued at once (no shifting of a long array) and writes it in
    /// transactions of up to 512 entries, waking waiters as each one commits.
    private func drain() async {
        while true {
            let taken = state.withLockedValue { state -> [ArchiveEntry] in
                let taken = state.pending
                state.pending = []
                if taken.isEmpty { state.writing = false }
                return taken
            }
            if taken.isEmpty { return }
            var start = 0
            while start < taken.count {
                let batch = Array(taken[start..<min(start + 512, taken.count)])
                start += batch.count
                // Trimming to the per-user limit walks that many index entries per account:
                // done for one batch in 32, so an account may briefly hold up to 32 × 512
                // rows more than its limit, instead of every write paying for it.
                batchesSinceTrim += 1
                let trim = batchesSinceTrim >= 32 ? maxPerUser : nil
                if trim != nil { batchesSinceTrim = 0 }
                do {
                    try await store.archive(batch, maxPerUser: trim)
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
}
