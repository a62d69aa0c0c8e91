import Logging
import NIOConcurrencyHelpers
import ParleyStorage

/// Hands archive entries to the store in the order they were routed (server order): one
/// writer drains the queue and submits each batch as one transaction. Every entry gets a
/// sequence number; an entry counts as written once the transaction holding it committed
/// (or was given up on), so "written through n" is what an acknowledgement may rely on.
/// Queries first wait for everything routed before them, so a client finds what it just sent.
///
/// Backpressure is the sessions' business (`C2SSessionHandler+ArchiveDurability`): each one
/// waits only for its own oldest uncommitted entries, which the single FIFO queue commits in
/// turn, so no stream waits behind a target set by everyone else's traffic.
final class ArchiveWriter: Sendable {
    /// What became of entries, as far as an acknowledgement is concerned.
    enum Outcome: Sendable, Equatable {
        /// Not committed yet.
        case pending
        case committed
        /// At least one of them could not be stored, even after retrying.
        case failed
    }

    private struct State {
        var pending: [ArchiveEntry] = []
        var writing = false
        var enqueued: UInt64 = 0
        var written: UInt64 = 0
        var waiters: [(UInt64, @Sendable () -> Void)] = []
        var committedBatches = 0
        /// Entries given up on, oldest first; only the latest `maxFailureRanges` are kept.
        var failures: [ClosedRange<UInt64>] = []
        /// Failures at or below this were forgotten: entries there count as failed.
        var failuresForgottenThrough: UInt64 = 0
    }

    private let store: any ArchiveStore
    private let maxPerUser: Int?
    private let retryPauses: [Duration]
    private let gatherInterval: Duration
    private let logger: Logger
    private let state = NIOLockedValueBox(State())
    /// Touched only by the single drain task.
    nonisolated(unsafe) private var batchesSinceTrim = 31

    init(
        store: any ArchiveStore, maxPerUser: Int?, logger: Logger, retryPauses: [Duration] = ArchiveWriter.retryPauses,
        gatherInterval: Duration = ArchiveWriter.gatherInterval
    ) {
        self.store = store
        self.gatherInterval = gatherInterval
        self.maxPerUser = maxPerUser
        self.retryPauses = retryPauses
        self.logger = logger
    }

    /// Entries queued beyond this make every session with entries of its own in the queue
    /// wait for its oldest one before reading on: memory stays bounded however many sessions
    /// send, and each waits only for its own place in the queue. Two batches' worth: the
    /// writer takes up to `batchLimit` at once, and as many may arrive while it commits them.
    /// At 4,096 (half a batch) a store whose commits take a little longer (PostgreSQL:
    /// ~2,200 entries per batch at saturation and as many arriving meanwhile) sat at the
    /// bound, and every session that sent while it was crossed waited a whole batch more than
    /// the others: p99 12-16× p50 (bench/README.md, PostgreSQL). The per-session window is
    /// what keeps each stream's wait like the others'.
    static let highWater = UInt64(2 * batchLimit)
    /// Messages one session may have waiting for the archive before it waits for the oldest:
    /// a sliding window, so a fast sender is slowed a little at every message rather than
    /// stopped for a whole backlog now and then (which made the p99 latency 50-100× the p50).
    /// Large enough for a few of a busy sender's messages per commit cycle on PostgreSQL
    /// (~25-90 ms): at 64 twenty senders to offline accounts filled their windows every cycle
    /// and stored 16,400-17,300 messages/s there, at 256 20,400-22,900 (SQLite 36,100-37,600
    /// against 43,100-44,300); full speed unchanged (bench/README.md, "Eighteenth round").
    static let sessionWindow = 256
    /// A failed transaction is tried again after each of these pauses before its entries are
    /// given up on: a busy or briefly full disk should not cost messages.
    static let retryPauses: [Duration] = [.milliseconds(50), .milliseconds(500), .seconds(2)]
    static let maxFailureRanges = 1024
    static let gatherInterval: Duration = .milliseconds(2)

    /// Queues entries in routing order and returns their sequence numbers.
    func enqueue(_ entries: [ArchiveEntry]) -> ClosedRange<UInt64>? {
        guard !entries.isEmpty else { return nil }
        let (start, sequences) = state.withLockedValue { state -> (Bool, ClosedRange<UInt64>) in
            state.pending.append(contentsOf: entries)
            let first = state.enqueued + 1
            state.enqueued += UInt64(entries.count)
            if state.writing { return (false, first...state.enqueued) }
            state.writing = true
            return (true, first...state.enqueued)
        }
        if start { Task { await drain() } }
        return sequences
    }

    /// Every entry up to this one was committed or given up on.
    var writtenThrough: UInt64 { state.withLockedValue { $0.written } }

    /// Entries queued and not yet written.
    var backlog: UInt64 { state.withLockedValue { $0.enqueued - $0.written } }

    /// Whether the entries numbered `sequences` are committed, without waiting.
    func outcome(of sequences: ClosedRange<UInt64>) -> Outcome {
        state.withLockedValue { state in
            guard state.written >= sequences.upperBound else { return .pending }
            if sequences.lowerBound <= state.failuresForgottenThrough { return .failed }
            // Failures are rare and few: a backwards scan stops at the first one before the span.
            for failure in state.failures.reversed() {
                if failure.upperBound < sequences.lowerBound { break }
                if failure.overlaps(sequences) { return .failed }
            }
            return .committed
        }
    }

    /// Returns once every entry up to `sequence` was committed or given up on.
    func waitUntilWritten(_ target: UInt64) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            whenWritten(target) { continuation.resume() }
        }
    }

    /// Calls `action` (on the writer's task, or at once on the caller's thread) once every
    /// entry up to `target` was committed or given up on: no task per waiting session.
    func whenWritten(_ target: UInt64, _ action: @escaping @Sendable () -> Void) {
        let ready = state.withLockedValue { state -> Bool in
            if state.written >= target { return true }
            state.waiters.append((target, action))
            return false
        }
        if ready { action() }
    }

    /// Returns once every entry enqueued before the call was committed or given up on.
    func flush() async {
        await waitUntilWritten(state.withLockedValue { $0.enqueued })
    }

    /// How many transactions committed so far: consecutive messages share them.
    var committedBatches: Int { state.withLockedValue { $0.committedBatches } }

    /// Shutdown: waits until everything accepted so far was committed or given up on.
    func waitUntilIdle(deadline: ContinuousClock.Instant) async {
        while state.withLockedValue({ $0.written < $0.enqueued }), ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// The most entries one transaction holds. Large on purpose: a commit writes every index
    /// page it dirtied to the WAL (and the checkpoint writes it again), and the per-account
    /// index pages are the same few whether a batch holds 1,000 rows or 8,000; measured with
    /// SQLite alone, 4,096 rows per commit instead of 1,024 cut the CPU by a third and the
    /// bytes written by 60% (bench/README.md). A batch is only this large when that much
    /// waited, so at low load commits stay small and quick.
    static let batchLimit = 8192

    /// Takes everything queued at once (no shifting of a long array) and writes it in
    /// transactions of up to `batchLimit` entries, waking waiters as each one commits.
    private func drain() async {
        var lastCommitStarted: ContinuousClock.Instant? = nil
        while true {
            if let lastCommitStarted { await gather(since: lastCommitStarted) }
            let taken = state.withLockedValue { state -> [ArchiveEntry] in
                let taken = state.pending
                state.pending = []
                if taken.isEmpty {
                    state.writing = false
                } else {
                    // Room for as many as this drain took: under load as many arrive meanwhile,
                    // and an array grown from empty by every message's two entries reallocated
                    // and copied a dozen times per batch on the event loops.
                    state.pending.reserveCapacity(taken.count)
                }
                return taken
            }
            if taken.isEmpty { return }
            var start = 0
            while start < taken.count {
                // Most drains take one batch's worth: that one goes as it is, not copied.
                let batch = taken.count <= Self.batchLimit ? taken : Array(taken[start..<min(start + Self.batchLimit, taken.count)])
                start += batch.count
                // Trimming to the per-user limit walks that many index entries per account:
                // done for one batch in 32, so an account may briefly hold up to 32 batches'
                // rows more than its limit, instead of every write paying for it.
                batchesSinceTrim += 1
                let trim = batchesSinceTrim >= 32 ? maxPerUser : nil
                if trim != nil { batchesSinceTrim = 0 }
                lastCommitStarted = .now
                let committed = await write(batch, trim: trim)
                let ready = state.withLockedValue { state -> [@Sendable () -> Void] in
                    let first = state.written + 1
                    state.written += UInt64(batch.count)
                    if committed {
                        state.committedBatches += 1
                    } else {
                        state.failures.append(first...state.written)
                        if state.failures.count > Self.maxFailureRanges {
                            state.failuresForgottenThrough = state.failures.removeFirst().upperBound
                        }
                    }
                    let written = state.written
                    let ready = state.waiters.filter { $0.0 <= written }.map(\.1)
                    state.waiters.removeAll { $0.0 <= written }
                    return ready
                }
                for action in ready { action() }
            }
        }
    }

    /// Under steady traffic, a transaction starts at most every `gatherInterval`, so that more
    /// entries share it: a commit costs about the same whatever it holds (the WAL frames of
    /// the index pages it dirtied, the fdatasync and the wake-ups around it), and at 2,000
    /// msg/s each message was nearly a commit of its own, ~400 µs of CPU per message; with the
    /// pause 0.62 of that (bench/README.md, "Eighteenth round"). At full speed commits are
    /// further apart than this anyway. Deliveries never wait for it; only acknowledgements
    /// (and archive queries) do, by at most the interval. After a quiet spell the first entry
    /// goes at once; a queue already holding a large batch does not wait either.
    private func gather(since lastCommitStarted: ContinuousClock.Instant) async {
        let wait = lastCommitStarted + gatherInterval - .now
        guard wait > .zero, state.withLockedValue({ $0.pending.count }) < Self.gatherBelow else { return }
        try? await Task.sleep(for: wait)
    }

    static let gatherBelow = 1024

    /// One transaction, retried after a pause or three. The writer moves on after giving up
    /// (a poisoned batch must not stop every later message from being archived); the entries
    /// are recorded as failed, so nothing acknowledges them as stored.
    private func write(_ batch: [ArchiveEntry], trim: Int?) async -> Bool {
        var attempt = 0
        while true {
            do {
                try await store.archive(batch, maxPerUser: trim)
                return true
            } catch {
                guard attempt < retryPauses.count else {
                    logger.error("messages not archived", metadata: ["count": "\(batch.count)", "error": "\(error)"])
                    return false
                }
                logger.warning("archive write failed; retrying", metadata: ["count": "\(batch.count)", "error": "\(error)"])
                try? await Task.sleep(for: retryPauses[attempt])
                attempt += 1
            }
        }
    }
}
