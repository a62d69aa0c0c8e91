import Foundation
import Logging
import NIOConcurrencyHelpers
import ParleyCore
import ParleyStorage

/// Writes rooms' archives off the service's lock and off the event loops. Work queued while
/// a write runs goes in the next one together, so a busy room costs one transaction per
/// batch rather than per message; operations keep their order (a room's messages before its
/// deletion, a deletion before a new room of the same name archives again).
///
/// An idle writer waits `gathering` before it starts: at a few messages a second nothing
/// else batches them, and a transaction of its own per message (a task, two thread hops,
/// begin, look-ups, commit) was about a sixth of the server's CPU for a message fanned out to
/// a hundred occupants at 20 messages/s (bench/README.md). Whoever needs the rows written
/// (an archive query, shutdown) calls `flush()`, which cuts the wait short.
final class MUCArchiveWriter: Sendable {
    /// A message to archive: its row, and the message whose text (without `to`) the row
    /// gets when written.
    struct Pending: Sendable {
        var entry: MUCArchiveEntry
        var message: XMLElement
    }

    enum Operation: Sendable {
        case append([Pending])
        case delete(room: String)
        case prune(before: Date)
    }

    private struct State {
        var queued: [Operation] = []
        var draining: Task<Void, Never>?
        /// Messages appended to each room's archive since it was last cut to `maxPerRoom`.
        var untrimmed: [String: Int] = [:]
        /// The drain waiting out `gathering`, resumed by the timer or by `flush()`.
        var waiting: CheckedContinuation<Void, Never>?
        /// Set by `flush()` until the drain it hurried has taken the queue.
        var hurry = false
        var queuedMessages = 0
    }

    /// How long an idle writer gathers work before a transaction.
    static let gathering = DispatchTimeInterval.milliseconds(200)
    /// A batch this large is written at once, gathering time or not.
    static let gatherLimit = 512

    let store: any MUCArchiveStore
    let service: String
    let maxPerRoom: Int?
    private let logger: Logger
    private let state = NIOLockedValueBox(State())

    init(store: any MUCArchiveStore, service: String, maxPerRoom: Int?, logger: Logger) {
        self.store = store
        self.service = service
        self.maxPerRoom = maxPerRoom
        self.logger = logger
    }

    func enqueue(_ operation: Operation) {
        let full = state.withLockedValue { state -> Bool in
            if case .append(let new) = operation, case .append(let pending)? = state.queued.last {
                state.queued[state.queued.count - 1] = .append(pending + new)
            } else {
                state.queued.append(operation)
            }
            if case .append(let new) = operation { state.queuedMessages += new.count }
            if state.draining == nil { state.draining = Task { await self.drain() } }
            return state.queuedMessages >= Self.gatherLimit
        }
        if full { wake() }
    }

    /// Waits until everything queued so far is written (or failed and was logged).
    func flush() async {
        let draining = state.withLockedValue { state -> Task<Void, Never>? in
            if state.draining != nil { state.hurry = true }
            return state.draining
        }
        wake()
        await draining?.value
    }

    private func wake() {
        state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            defer { state.waiting = nil }
            return state.waiting
        }?.resume()
    }

    /// Waits `gathering`, unless `flush()` or a full queue says not to.
    private func gather() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLockedValue { state -> Bool in
                guard !state.hurry, state.queuedMessages < Self.gatherLimit else { return true }
                state.waiting = continuation
                return false
            }
            if now { return continuation.resume() }
            DispatchQueue.global().asyncAfter(deadline: .now() + Self.gathering) { self.wake() }
        }
    }

    private func drain() async {
        await gather()
        while true {
            let batch = state.withLockedValue { state -> [Operation] in
                let batch = state.queued
                state.queued = []
                state.queuedMessages = 0
                state.hurry = false
                if batch.isEmpty { state.draining = nil }
                return batch
            }
            guard !batch.isEmpty else { return }
            for operation in batch { await perform(operation) }
        }
    }

    private func perform(_ operation: Operation) async {
        do {
            switch operation {
            case .append(let pending):
                let entries = pending.map { item in
                    var entry = item.entry
                    var message = item.message
                    message.to = nil
                    entry.stanza = message.xmlString()
                    return entry
                }
                try await store.appendMUCArchive(entries, maxPerRoom: trimDue(after: entries) ? maxPerRoom : nil)
            case .delete(let room):
                state.withLockedValue { $0.untrimmed[room] = nil }
                try await store.deleteMUCArchive(service: service, room: room)
            case .prune(let date):
                let removed = try await store.pruneMUCArchive(before: date)
                if removed > 0 { logger.info("expired room messages deleted", metadata: ["count": "\(removed)"]) }
            }
        } catch {
            logger.error("cannot write a room archive", metadata: ["service": "\(service)", "error": "\(error)"])
        }
    }

    /// Whether appending `entries` is the time to cut the rooms' archives back to
    /// `maxPerRoom`: once every `trimStep` messages to a room. Finding where a room's newest
    /// `maxPerRoom` messages begin walks that many index entries (about 0.3 ms for 10,000),
    /// which, done for every message of a room that sends a few a second, was a sixth of the
    /// server's CPU for the message's fan-out to a hundred occupants. So an archive holds up to `trimStep - 1`
    /// messages above its limit between cuts.
    private func trimDue(after entries: [MUCArchiveEntry]) -> Bool {
        guard let maxPerRoom else { return false }
        let step = Self.trimStep(maxPerRoom)
        return state.withLockedValue { state in
            var due = false
            for entry in entries {
                // A room's first messages since the start are cut at once: a previous process
                // may have left its archive above the limit.
                let count = state.untrimmed[entry.room].map { $0 + 1 } ?? step
                state.untrimmed[entry.room] = count
                if count >= step { due = true }
            }
            // The store cuts every room the batch touched.
            if due { for entry in entries { state.untrimmed[entry.room] = 0 } }
            return due
        }
    }

    /// 1 % of the limit: exact for small limits, one cut per hundred messages for large ones.
    static func trimStep(_ maxPerRoom: Int) -> Int { max(1, maxPerRoom / 100) }
}
