import NIOCore
import ParleyCore

/// An XEP-0198 `<r/>` behind messages whose storage is still being written (`pendingDurability`:
/// an offline copy, a cluster inbox row) holds only its own `<a/>`, as it does behind archive
/// rows: the stream reads on, so the next messages join the same group commits. Holding the
/// whole stream instead made a client that asks after every message wait one commit per
/// message (cross-node messages in a cluster ran at a tenth of the same-node rate).
extension C2SSessionHandler {
    func acknowledgeAfterPendingWork(_ session: BoundSession) {
        guard let context else { return }
        let rows: ClosedRange<UInt64>?
        switch session.durableInbound() {
        case .durable: rows = nil
        case .pending(let pending): rows = pending
        case .failed: return failUnstoredMessages()
        }
        let waits = pendingDurability
        let generation = durabilityGeneration
        let end = pendingDurabilityPruned + waits.count
        let ticket = nextForwardsTicket
        nextForwardsTicket &+= 1
        unfinishedForwards.insert(ticket)
        deferredAcknowledgements.append((session.inboundCount, rows, ticket))
        let archive = server.archive
        let loop = context.eventLoop
        let loopBound = NIOLoopBound(self, eventLoop: loop)
        Task {
            for wait in waits { await wait.value }
            loop.execute {
                let handler = loopBound.value
                handler.unfinishedForwards.remove(ticket)
                // Done, so a later stanza that must wait for durability need not wait for these.
                if handler.durabilityGeneration == generation, end > handler.pendingDurabilityPruned {
                    let done = min(end - handler.pendingDurabilityPruned, handler.pendingDurability.count)
                    handler.pendingDurability.removeFirst(done)
                    handler.pendingDurabilityPruned += done
                }
                guard !handler.isClosed else { return }
                // Archive rows still pending then ask for the one archive wake-up the session
                // waits on (`wakeWhenArchived`), not one of their own per <r/>.
                handler.answerDeferredAcknowledgements(archive)
            }
        }
    }
}
