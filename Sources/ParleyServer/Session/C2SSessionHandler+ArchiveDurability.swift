import NIOCore
import ParleyCore

/// The archive's share of a session's flow control and durability. Messages are delivered as
/// soon as they are routed; their archive rows are committed by the archive writer in group
/// commits shortly after. The session keeps the sequence numbers of its own rows not yet
/// known to be committed, and:
/// - before anything that could acknowledge them to the client (an iq, presence: any answer
///   comes after it), waits until all of them are committed; an XEP-0198 `<r/>` holds only
///   its own `<a/>` until then, as clients ask after every message or few;
/// - reads on while fewer than `ArchiveWriter.sessionWindow` of its messages wait, and the
///   writer is not far behind; otherwise it waits for its own *oldest* one only. The queue is
///   one FIFO for everybody, so every sending session waits about as long as the others: the
///   fairness the earlier shared target ("until the whole backlog is under 1024") lacked.
extension C2SSessionHandler {
    /// After routing a message whose rows were queued (and noted in `archiveUnconfirmed`).
    func holdIfArchiveBehind() {
        guard let archive = server.archive else { return }
        forgetCommittedArchiveRows(archive)
        guard let oldest = archiveUnconfirmed.first else { return }
        if archiveUnconfirmed.count > ArchiveWriter.sessionWindow || archive.backlog > ArchiveWriter.highWater {
            holdUntilArchived(oldest)
        }
    }

    /// The client's own acknowledgement (`<a/>`) and its XEP-0352 state get no answer, so
    /// they acknowledge nothing and need not wait.
    func isAnsweredByNothing(_ element: XMLElement) -> Bool {
        (isStreamManagement(element) && element.name == "a") || isClientState(element)
    }

    /// An XEP-0198 `<r/>` holds nothing but its own answer (`deferAcknowledgement`).
    func isAcknowledgementRequest(_ element: XMLElement) -> Bool {
        isStreamManagement(element) && element.name == "r" && boundSession?.isManaged == true
    }

    /// Answers `<r/>` with `h` (the count when it was asked) once `rows`, the archive rows of
    /// every message that count covers, are committed. The stream goes on meanwhile, so its
    /// next messages join the same group commit; answers leave in the order asked for.
    func deferAcknowledgement(h: UInt32, rows: ClosedRange<UInt64>, archive: ArchiveWriter) {
        guard context != nil else { return }
        deferredAcknowledgements.append((h, rows, nil))
        // A wake-up already asked for comes first (for an older answer); the answers it
        // leaves pending ask for the next one. A client asking after every message so costs
        // one hop from the writer's thread per commit, not one per message.
        if !awaitsArchiveWake { wakeWhenArchived(through: rows.upperBound, archive) }
    }

    private func wakeWhenArchived(through target: UInt64, _ archive: ArchiveWriter) {
        guard let context else { return }
        awaitsArchiveWake = true
        let loop = context.eventLoop
        let loopBound = NIOLoopBound(self, eventLoop: loop)
        archive.whenWritten(target) {
            loop.execute {
                let handler = loopBound.value
                handler.awaitsArchiveWake = false
                guard !handler.isClosed else { return }
                handler.answerDeferredAcknowledgements(archive)
            }
        }
    }

    /// Sends the waiting answers whose rows are committed, oldest first, stopping at the
    /// first still pending; rows given up on end the stream instead (nothing may claim them).
    func answerDeferredAcknowledgements(_ archive: ArchiveWriter?) {
        var answered = false
        while let first = deferredAcknowledgements.first {
            if let ticket = first.forwards, unfinishedForwards.contains(ticket) {
                if answered { scheduleFlush() }
                return
            }
            if let rows = first.rows, let archive {
                switch archive.outcome(of: rows) {
                case .pending:
                    if answered { scheduleFlush() }
                    if !awaitsArchiveWake { wakeWhenArchived(through: rows.upperBound, archive) }
                    return
                case .failed:
                    deferredAcknowledgements = []
                    return failUnstoredMessages()
                case .committed:
                    break
                }
            }
            deferredAcknowledgements.removeFirst()
            write(.element(StreamManagementXML.answer(first.h)))
            answered = true
        }
        releaseOccasionalIfIdle()
        if answered { scheduleFlush() }
    }

    /// The newest of this session's rows not committed yet, if any: a stanza that may
    /// acknowledge the messages before it waits for this one.
    func newestUnconfirmedArchiveRow() -> UInt64? {
        guard let archive = server.archive, !archiveUnconfirmed.isEmpty else { return nil }
        forgetCommittedArchiveRows(archive)
        return archiveUnconfirmed.last
    }

    /// Sequence numbers only grow, and commits go in order: what is written is a prefix.
    private func forgetCommittedArchiveRows(_ archive: ArchiveWriter) {
        let written = archive.writtenThrough
        guard let first = archiveUnconfirmed.first, first <= written else { return }
        if archiveUnconfirmed.last! <= written {
            archiveUnconfirmed.removeAll(keepingCapacity: archiveUnconfirmed.count > 1)
        } else {
            archiveUnconfirmed.removeFirst(archiveUnconfirmed.firstIndex { $0 > written }!)
        }
    }

    /// Holds every event (reading stops once a few are queued) until the archive has written
    /// through `target`; no task is made for the wait, the writer calls back.
    func holdUntilArchived(_ target: UInt64) {
        guard let context, let archive = server.archive else { return }
        isSuspended = true
        let loop = context.eventLoop
        let loopBound = NIOLoopBound(self, eventLoop: loop)
        archive.whenWritten(target) {
            loop.execute {
                let handler = loopBound.value
                handler.isSuspended = false
                guard !handler.isClosed else { return }
                handler.drainSuspendedEvents()
            }
        }
    }
}
