import NIOCore
import ParleyCore

/// XEP-0198 resumption across the nodes of a cluster: the node holding a resumable session
/// hands it over (`handOver`) when its client resumes on another node, which adopts it
/// (`adopt`) and resumes it as its own.
extension BoundSession {
    /// Gives the session up to another node: out of routing here without unavailable presence
    /// (it goes on there), its connection, if any, closed, and its state returned. nil if it
    /// is gone or ending, or if messages it counted could not be stored (then it ends here).
    func handOver() async -> SessionHandOver? {
        enum Step {
            case gone, failed
            case wait(ClosedRange<UInt64>)
            case take(SessionHandle, Management, [Unacked], Attachment?)
        }
        while true {
            let step: Step = state.withLockedValue { state in
                guard !state.ending, let handle = state.handle, state.management?.resumptionID != nil else { return .gone }
                switch Self.durability(of: &state.management!, archive: server.archive) {
                case .pending(let span): return .wait(span)
                case .failed: return .failed
                case .durable: break
                }
                state.ending = true
                state.ended = true
                state.management!.detachTimer?.cancel()
                state.management!.detachTimer = nil
                let previous = state.attachment
                state.attachment = nil
                Self.requeueWaiting(in: &state)
                let management = state.management!
                let queued = state.management!.queue.removeAll()
                state.handle = nil
                return .take(handle, management, queued, previous)
            }
            switch step {
            case .gone:
                return nil
            case .failed:
                end(reason: "messages it counted could not be archived")
                return nil
            case .wait(let span):
                await server.archive?.waitUntilWritten(span.upperBound)
            case .take(let handle, let management, let queued, let previous):
                server.sessions.unbind(handle, moved: true)
                if let id = management.resumptionID { server.resumption.forget(id, self) }
                previous?.run { $0.fail(StreamError(.conflict, text: "The session was resumed on another connection.")) }
                server.metrics.sessionsAuthenticated.decrement()
                endedPromise.succeed(())
                server.logger.info("session handed over to another node", metadata: ["jid": "\(handle.jid)", "unacked": "\(queued.count)"])
                let transfer = SessionTransfer(
                    jid: handle.jid, resumptionID: management.resumptionID ?? "", inbound: management.inbound,
                    acknowledged: management.queue.acknowledged, queue: queued.map(\.stanza),
                    resumeTimeoutSeconds: management.resumeTimeout.nanoseconds / 1_000_000_000, maxUnacked: management.maxUnacked,
                    presence: handle.withPresence { $0 })
                return SessionHandOver(transfer: transfer, confirmed: queued.compactMap(\.acknowledged))
            }
        }
    }

    /// The counters and queue of a session handed over by another node, on a new session
    /// not yet attached to routing; it then waits detached for `resume(by:h:)`.
    func adopt(_ transfer: SessionTransfer) {
        state.withLockedValue { state in
            var queue = UnackedQueue<Unacked>(startingAt: transfer.acknowledged)
            for stanza in transfer.queue { queue.append(Unacked(stanza: stanza)) }
            state.management = Management(
                inbound: transfer.inbound, queue: queue, resumptionID: transfer.resumptionID,
                resumeTimeout: .seconds(max(transfer.resumeTimeoutSeconds, 1)), maxUnacked: transfer.maxUnacked)
        }
    }
}

extension ServerContext {
    /// Another node's client resumes `previd`: the session, if this node holds it for that
    /// user's account, is handed over.
    public func handOverSession(previd: String, user: String, accountID: Int64?) async -> SessionHandOver? {
        guard let session = resumption.session(previd), session.user == user, session.accountID == accountID else { return nil }
        return await session.handOver()
    }
}

/// What the giving node does once the transfer is safe in the other node's inbox: offline
/// deliveries in the queue may then be deleted from storage, as the client's acknowledgement
/// would have done; the new node counts them from now on.
public struct SessionHandOver: Sendable {
    public let transfer: SessionTransfer
    let confirmed: [EventLoopPromise<Void>]

    public func committed() {
        for promise in confirmed { promise.succeed(()) }
    }
}
