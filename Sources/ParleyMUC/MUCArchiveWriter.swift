import Foundation
import Logging
import NIOConcurrencyHelpers
import ParleyCore
import ParleyStorage

/// Writes rooms' archives off the service's lock and off the event loops. Work queued while
/// a write runs goes in the next one together, so a busy room costs one transaction per
/// batch rather than per message; operations keep their order (a room's messages before its
/// deletion, a deletion before a new room of the same name archives again).
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
    }

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
        state.withLockedValue { state in
            if case .append(let new) = operation, case .append(let pending)? = state.queued.last {
                state.queued[state.queued.count - 1] = .append(pending + new)
            } else {
                state.queued.append(operation)
            }
            guard state.draining == nil else { return }
            state.draining = Task { await self.drain() }
        }
    }

    /// Waits until everything queued so far is written (or failed and was logged).
    func flush() async {
        await state.withLockedValue { $0.draining }?.value
    }

    private func drain() async {
        while true {
            let batch = state.withLockedValue { state -> [Operation] in
                let batch = state.queued
                state.queued = []
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
                try await store.appendMUCArchive(entries, maxPerRoom: maxPerRoom)
            case .delete(let room): try await store.deleteMUCArchive(service: service, room: room)
            case .prune(let date):
                let removed = try await store.pruneMUCArchive(before: date)
                if removed > 0 { logger.info("expired room messages deleted", metadata: ["count": "\(removed)"]) }
            }
        } catch {
            logger.error("cannot write a room archive", metadata: ["service": "\(service)", "error": "\(error)"])
        }
    }
}
