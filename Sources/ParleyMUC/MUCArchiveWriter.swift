import Foundation
import Logging
import ParleyCore
import ParleyStorage

/// Writes rooms' archives off the service's lock and off the event loops, on a thread of its
/// own. Work queued while a write runs goes in the next one together, so a busy room costs one
/// transaction per batch rather than per message; operations keep their order (a room's
/// messages before its deletion, a deletion before a new room of the same name archives
/// again).
///
/// An idle writer waits `gathering` before it starts: at a few messages a second nothing
/// else batches them. Whoever needs the rows written (an archive query, shutdown) calls
/// `flush()`, which cuts the wait short. The thread waits on a condition and writes with the
/// store's blocking call: the task, the timer on Dispatch's manager thread, the continuation
/// and GRDB's hop to its writer queue and back that each batch cost before were, in a room
/// of 10 at 20 messages/s, a fifth of the server's CPU (bench/README.md, "Twelfth round").
/// The thread ends after `idleExit` without work and starts again with the next.
final class MUCArchiveWriter: @unchecked Sendable {
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

    /// How long an idle writer gathers work before a transaction. A commit costs about as
    /// much CPU as a few hundred rows, so a room of a few messages a second paid mostly for
    /// commits at 0.2 s (bench/README.md, "Seventeenth round"); the archive is history, not
    /// delivery (occupants have each message before it is written, and a query or a
    /// shutdown cuts the wait short), so what a crash may lose is the last second of it.
    static let gathering: TimeInterval = 1
    /// A batch this large is written at once, gathering time or not.
    static let gatherLimit = 512

    let store: any MUCArchiveStore
    let service: String
    let maxPerRoom: Int?
    /// How long the thread waits for work before it ends.
    let idleExit: TimeInterval
    private let logger: Logger

    private let condition = NSCondition()
    // Guarded by `condition`.
    private var queued: [Operation] = []
    private var queuedMessages = 0
    /// Calls to `enqueue` so far, and how many of them were written (or failed and logged).
    private var enqueued: UInt64 = 0
    private var written: UInt64 = 0
    /// Set by `flush()` until the thread took the queue.
    private var hurry = false
    private var threadRunning = false
    private var startedThreads = 0
    private var flushes: [(through: UInt64, continuation: CheckedContinuation<Void, Never>)] = []

    /// Messages appended to each room's archive since it was last cut to `maxPerRoom`.
    /// Touched by the writer's thread only.
    private var untrimmed: [String: Int] = [:]

    init(store: any MUCArchiveStore, service: String, maxPerRoom: Int?, logger: Logger, idleExit: TimeInterval = 10) {
        self.store = store
        self.service = service
        self.maxPerRoom = maxPerRoom
        self.idleExit = idleExit
        self.logger = logger
    }

    /// Threads started so far (for tests).
    var threadsStarted: Int {
        condition.lock()
        defer { condition.unlock() }
        return startedThreads
    }

    func enqueue(_ operation: Operation) {
        condition.lock()
        defer { condition.unlock() }
        let wasEmpty = queued.isEmpty
        if case .append(let new) = operation, case .append(var pending)? = queued.last {
            // Taken out first, so the list is extended in place: `pending + new` copied the
            // whole batch (up to `gatherLimit` messages) for every message, on the room's
            // thread and under the service's lock.
            queued.removeLast()
            pending.append(contentsOf: new)
            queued.append(.append(pending))
        } else {
            queued.append(operation)
        }
        enqueued += 1
        if case .append(let new) = operation { queuedMessages += new.count }
        if !threadRunning {
            threadRunning = true
            startedThreads += 1
            let thread = Thread { [self] in run() }
            thread.name = "parley-room-archive"
            thread.start()
        } else if wasEmpty || queuedMessages >= Self.gatherLimit {
            // Only then is the thread waiting for this: a signal while it gathers would
            // wake it for nothing.
            condition.signal()
        }
    }

    /// Waits until everything queued so far is written (or failed and was logged).
    func flush() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            condition.lock()
            guard written < enqueued else {
                condition.unlock()
                return continuation.resume()
            }
            flushes.append((enqueued, continuation))
            hurry = true
            condition.signal()
            condition.unlock()
        }
    }

    /// The thread: waits for work, gathers, writes, until idle for `idleExit`.
    private func run() {
        condition.lock()
        while true {
            while queued.isEmpty {
                if !condition.wait(until: Date(timeIntervalSinceNow: idleExit)), queued.isEmpty {
                    threadRunning = false
                    condition.unlock()
                    return
                }
            }
            let deadline = Date(timeIntervalSinceNow: Self.gathering)
            while !hurry, queuedMessages < Self.gatherLimit, condition.wait(until: deadline) {}
            let batch = queued
            let through = enqueued
            queued = []
            queuedMessages = 0
            hurry = false
            condition.unlock()

            for operation in batch { perform(operation) }

            condition.lock()
            written = through
            let done = flushes.filter { $0.through <= through }.map(\.continuation)
            flushes.removeAll { $0.through <= through }
            if !done.isEmpty {
                condition.unlock()
                for continuation in done { continuation.resume() }
                condition.lock()
            }
        }
    }

    private func perform(_ operation: Operation) {
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
                try store.appendMUCArchiveBlocking(entries, maxPerRoom: trimDue(after: entries) ? maxPerRoom : nil)
            case .delete(let room):
                untrimmed[room] = nil
                let (store, service) = (self.store, self.service)
                try waitingForAsync { try await store.deleteMUCArchive(service: service, room: room) }
            case .prune(let date):
                let store = self.store
                let removed = try waitingForAsync { try await store.pruneMUCArchive(before: date) }
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
        var due = false
        for entry in entries {
            // A room's first messages since the start are cut at once: a previous process
            // may have left its archive above the limit.
            let count = untrimmed[entry.room].map { $0 + 1 } ?? step
            untrimmed[entry.room] = count
            if count >= step { due = true }
        }
        // The store cuts every room the batch touched.
        if due { for entry in entries { untrimmed[entry.room] = 0 } }
        return due
    }

    /// 1 % of the limit: exact for small limits, one cut per hundred messages for large ones.
    static func trimStep(_ maxPerRoom: Int) -> Int { max(1, maxPerRoom / 100) }
}
