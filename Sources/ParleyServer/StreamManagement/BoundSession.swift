import Logging
import NIOConcurrencyHelpers
import NIOCore
import ParleyCore

/// The part of a bound session that outlives its connection: the `SessionHandle` the router
/// knows, and, once XEP-0198 is enabled, the counters and the stanzas sent but not yet
/// acknowledged. The connection's handler is *attached* to it; when a resumable session's
/// connection drops, it is *detached*: still routable, queueing what arrives, until a new
/// connection resumes it or `resumeTimeout` passes. Then (or when it ends any other way) it
/// ends for good: it leaves routing and every unacknowledged message is handed on (to the
/// account's other resources or offline storage), never dropped.
///
/// State is behind a lock, so the session may move between event loops on resumption;
/// writes always happen on the attached handler's own loop.
final class BoundSession: Sendable {
    struct State: Sendable {
        var handle: SessionHandle?
        var attachment: Attachment?
        private var managementBox: ManagementBox?
        /// XEP-0198 state, from `<enable/>` on (boxed: see `ManagementBox`). Changed in
        /// place: the box gives its value up for the change, so the unacknowledged queue
        /// is not copied.
        var management: Management? {
            get { managementBox?.value }
            _modify {
                var value: Management? = nil
                let inPlace = isKnownUniquelyReferenced(&managementBox)
                if inPlace {
                    swap(&value, &managementBox!.value)
                } else {
                    value = managementBox?.value
                }
                defer {
                    if let value {
                        if inPlace { managementBox!.value = value } else { managementBox = ManagementBox(value) }
                    } else {
                        managementBox = nil
                    }
                }
                yield &value
            }
        }
        var held: [SessionDelivery] = []
        var waiting = ClientStateQueue()
        /// Set when ending for good begins; deliveries then wait in `held`.
        var ending = false
        var ended = false
        /// XEP-0352: the client said `<inactive/>`; stanzas that can wait are held back.
        var inactive = false
        /// Deliveries handed to `hopsHandler`'s loop as tasks and not yet taken there. While
        /// there are any, a delivery made on that loop joins the queue instead of being
        /// written at once, which would overtake them (see `dispatch`). Counted per handler:
        /// a resumption's new connection waits for none of the old one's tasks, and those
        /// do not count down its own.
        var hopsInFlight: UInt32 = 0
        var hopsHandler: ObjectIdentifier?

        init(attachment: Attachment) {
            self.attachment = attachment
        }
    }

    let server: ServerContext
    /// The localpart that authenticated, and the id of its account: only that account may
    /// resume the session (not a new one that took the name after the old was deleted).
    let user: String
    let accountID: Int64?
    private let start = NIODeadline.now()
    let state: NIOLockedValueBox<State>
    let endedPromise: EventLoopPromise<Void>

    init(server: ServerContext, user: String, accountID: Int64? = nil, attachment: Attachment) {
        self.server = server
        self.user = user
        self.accountID = accountID
        self.endedPromise = attachment.eventLoop.makePromise(of: Void.self)
        self.state = NIOLockedValueBox(State(attachment: attachment))
    }

    /// Completes once the session has ended for good (not when a connection merely drops).
    var endedFuture: EventLoopFuture<Void> { endedPromise.futureResult }

    func setHandle(_ handle: SessionHandle) {
        state.withLockedValue { $0.handle = handle }
    }

    /// The bind failed or the connection went away before it completed.
    func discard() {
        state.withLockedValue { state in
            state.ending = true
            state.ended = true
            state.handle = nil
            state.attachment = nil
        }
        endedPromise.succeed(())
    }

    var isManaged: Bool { state.withLockedValue { $0.management != nil } }
    var inboundCount: UInt32 { state.withLockedValue { $0.management?.inbound ?? 0 } }
    var unackedCount: Int { state.withLockedValue { $0.management?.queue.count ?? 0 } }
    var resumptionID: String? { state.withLockedValue { $0.management?.resumptionID } }

    // MARK: XEP-0198

    /// `<enable/>`; false if it was already enabled.
    func enable(resumptionID: String?, resumeTimeout: TimeAmount, maxUnacked: Int) -> Bool {
        state.withLockedValue { state in
            guard state.management == nil else { return false }
            state.management = Management(resumptionID: resumptionID, resumeTimeout: resumeTimeout, maxUnacked: maxUnacked)
            return true
        }
    }

    /// Counts a stanza from the client; false if `handler` no longer holds the session (it
    /// was resumed elsewhere), and the stanza must be ignored.
    func countInbound(by handler: ObjectIdentifier) -> Bool {
        state.withLockedValue { state in
            guard state.attachment?.id == handler else { return false }
            state.management?.inbound &+= 1
            return true
        }
    }

    /// A message counted in `inbound` was queued for the archive as `sequences`.
    func archived(_ sequences: ClosedRange<UInt64>) {
        state.withLockedValue { state in
            guard state.management != nil else { return }
            let first = state.management!.unconfirmedArchive?.lowerBound ?? sequences.lowerBound
            state.management!.unconfirmedArchive = first...sequences.upperBound
        }
    }

    enum Durability: Equatable {
        /// Everything counted is stored: this `h` may be reported.
        case durable(h: UInt32)
        /// Archive rows of counted messages are not committed yet; ask again once they are.
        case pending(ClosedRange<UInt64>)
        /// Some could not be stored: no `h` covering them may be reported.
        case failed
    }

    /// The `h` an acknowledgement (`<a/>`) may give: nothing the server acknowledges may be
    /// lost, even if the process is killed right after.
    func durableInbound() -> Durability {
        state.withLockedValue { state in
            guard state.management != nil else { return .durable(h: 0) }
            return Self.durability(of: &state.management!, archive: server.archive)
        }
    }

    /// Checks the archive's progress without waiting; forgets what it found committed.
    static func durability(of management: inout Management, archive: ArchiveWriter?) -> Durability {
        if let span = management.unconfirmedArchive, let archive {
            switch archive.outcome(of: span) {
            case .pending: return .pending(span)
            case .failed: return .failed
            case .committed: management.unconfirmedArchive = nil
            }
        }
        return .durable(h: management.inbound)
    }

    /// The client's `<a h='…'/>`.
    func acknowledge(_ h: UInt32) throws(UnackedQueue<Unacked>.AckError) {
        let result: Result<[Unacked], UnackedQueue<Unacked>.AckError> = state.withLockedValue { state in
            guard state.management != nil else { return .success([]) }
            return state.management!.queue.release(upTo: h)
        }
        for item in try result.get() { item.acknowledged?.succeed(()) }
    }

    // MARK: XEP-0352

    enum ClientStateChange {
        case notAttached
        /// Write these (held while inactive), oldest first; `managed` if XEP-0198 counts them.
        case flush([XMLElement], managed: Bool)
        case overflow
    }

    /// `<inactive/>` (`active` false), `<active/>`, or, with `active` nil, any other stanza
    /// from the client: it is awake, so what waited goes out, but the state stays.
    func clientState(active: Bool?, by handler: ObjectIdentifier) -> ClientStateChange {
        state.withLockedValue { state in
            guard !state.ending, state.attachment?.id == handler else { return .notAttached }
            if let active { state.inactive = !active }
            if active == false || state.waiting.isEmpty { return .flush([], managed: false) }
            let held = state.waiting.drain()
            return Self.recordSent(held, in: &state) ? .flush(held, managed: state.management != nil) : .overflow
        }
    }

    /// The connection is gone (detached or resumed elsewhere): what waited joins the
    /// stanzas to resend, and the next connection starts out active, as any new stream does.
    static func requeueWaiting(in state: inout State) {
        state.inactive = false
        guard state.management != nil, !state.waiting.isEmpty else { return }
        for stanza in state.waiting.drain() { state.management!.queue.append(Unacked(stanza: stanza)) }
    }

    // MARK: Connections

    enum Release { case notAttached, detached, ending }

    /// The handler's connection is over. A resumable session (`detach`) waits for its client;
    /// otherwise the caller ends it.
    func release(from handler: ObjectIdentifier, detach: Bool) -> Release {
        state.withLockedValue { state in
            guard !state.ending, state.attachment?.id == handler else { return .notAttached }
            state.attachment = nil
            Self.requeueWaiting(in: &state)
            guard detach, let management = state.management, management.resumptionID != nil,
                management.resumeTimeout > .zero, let handle = state.handle
            else { return .ending }
            state.management!.detachGeneration += 1
            let generation = state.management!.detachGeneration
            state.management!.detachTimer = handle.eventLoop.scheduleTask(in: management.resumeTimeout) { [self] in
                expire(generation: generation)
            }
            return .detached
        }
    }

    private func expire(generation: Int) {
        let expired = state.withLockedValue { state in
            state.management?.detachGeneration == generation && state.attachment == nil && !state.ending
        }
        if expired { end(reason: "not resumed in time") }
    }

    enum Resumption {
        case resumed(SessionHandle, inbound: UInt32, resend: [XMLElement], previous: Attachment?)
        /// Not resumed yet: the `h` to report counts messages whose archive rows are not
        /// committed. Try again once they are.
        case archivePending(ClosedRange<UInt64>)
        /// Not resumed: messages the session counted could not be stored, so no `h` may be
        /// reported; the caller ends the session.
        case archiveFailed
        case gone
        case handledCountTooHigh(h: UInt32, sendCount: UInt32)
    }

    /// XEP-0198 §5: a new connection takes the session over; `h` is what the client received.
    func resume(by attachment: Attachment, h: UInt32) -> Resumption {
        var released: [Unacked] = []
        let outcome: Resumption = state.withLockedValue { state in
            guard !state.ending, let handle = state.handle, state.management?.resumptionID != nil else { return .gone }
            switch Self.durability(of: &state.management!, archive: server.archive) {
            case .durable: break
            case .pending(let span): return .archivePending(span)
            case .failed: return .archiveFailed
            }
            switch state.management!.queue.release(upTo: h) {
            case .success(let items): released = items
            case .failure(.handledCountTooHigh(let h, let sendCount)): return .handledCountTooHigh(h: h, sendCount: sendCount)
            }
            state.management!.detachTimer?.cancel()
            state.management!.detachTimer = nil
            state.management!.detachGeneration += 1
            Self.requeueWaiting(in: &state)
            let previous = state.attachment
            state.attachment = attachment
            let management = state.management!
            return .resumed(handle, inbound: management.inbound, resend: management.queue.pending.map(\.stanza), previous: previous)
        }
        for item in released { item.acknowledged?.succeed(()) }
        return outcome
    }

    // MARK: Ending

    /// Ends the session for good, once: it leaves routing, its unavailable presence goes out,
    /// and what the client never acknowledged is handed on in order.
    func end(reason: String) {
        let claimed: SessionHandle? = state.withLockedValue { state in
            guard !state.ending else { return nil }
            state.ending = true
            state.attachment = nil
            state.management?.detachTimer?.cancel()
            state.management?.detachTimer = nil
            return state.handle
        }
        guard let handle = claimed else { return }
        server.sessions.unbind(handle)
        let (management, waiting, held): (Management?, [XMLElement], [SessionDelivery]) = state.withLockedValue { state in
            state.ended = true
            state.handle = nil
            let management = state.management
            state.management?.queue = UnackedQueue()
            defer { state.held = [] }
            return (management, state.waiting.drain(), state.held)
        }
        if let id = management?.resumptionID {
            server.resumption.remove(
                id,
                tombstone: .init(user: user, h: management?.inbound ?? 0, archive: management?.unconfirmedArchive, accountID: accountID))
        }
        server.events.publish(.sessionEnded(handle))
        server.metrics.sessionsAuthenticated.decrement()
        endedPromise.succeed(())
        var unacked = management?.queue
        let pending = unacked?.removeAll() ?? []
        for item in pending {
            if let acknowledged = item.acknowledged {
                acknowledged.fail(ChannelError.ioOnClosedChannel)
            } else {
                handOn(.stanza(item.stanza), account: handle.jid.bare)
            }
        }
        // Never sent, so after what was: messages held for an inactive client (XEP-0352).
        for stanza in waiting { handOn(.stanza(stanza), account: handle.jid.bare) }
        for delivery in held { handOn(delivery, account: handle.jid.bare) }
        let seconds = (NIODeadline.now() - start).nanoseconds / 1_000_000_000
        server.logger.info(
            "session ended",
            metadata: ["jid": "\(handle.jid)", "reason": "\(reason)", "duration_s": "\(seconds)", "unacked": "\(pending.count)"])
    }

    /// A delivery the session can no longer take: messages go to the account's other
    /// resources or offline storage; an iq request is answered with an error so its sender
    /// does not wait; an offline delivery's promise fails (the message stays stored).
    /// Presence and other messages lapse as they would for an unavailable resource.
    func handOn(_ delivery: SessionDelivery, account: JID? = nil) {
        switch delivery {
        case .stanza(let stanza):
            switch stanza.name {
            case "message":
                guard let account = account ?? stanza.to.flatMap({ try? JID($0) })?.bare else { return }
                server.router.redeliver(stanza, account: account)
            case "iq" where stanza.type == "get" || stanza.type == "set":
                guard let from = stanza.from.flatMap({ try? JID($0) }), from.isFull,
                    let reply = stanza.errorReply(StanzaError(.serviceUnavailable))
                else { return }
                server.sessions.session(from)?.deliver(reply)
            default:
                return
            }
        case .confirmed(_, let written):
            written.fail(ChannelError.ioOnClosedChannel)
        case .terminate:
            return
        }
    }
}
