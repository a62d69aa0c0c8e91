import NIOCore
import ParleyCore

/// The session's deliveries: what the router hands it, from any thread, and what its
/// attached handler records on its own loop before writing (XEP-0198 counting, XEP-0352
/// holding back), in the order they were dispatched.
extension BoundSession {
    /// Everything the router hands the session arrives here, from any thread; with a
    /// `batch`, the hop to the attached handler's loop waits for its `submit()`.
    ///
    /// A delivery made on the handler's own loop is written at once only if nothing handed
    /// to that loop for this session is still waiting in its queue. A room's message is
    /// written at once to the occupants on the loop that sends it and reaches the others
    /// as a task; the room's next message may be sent from one of those other loops (by
    /// whichever thread finds the room's queue idle) before that task ran, and written at
    /// once it reached those occupants first: two messages, even from one sender, in the
    /// wrong order.
    func dispatch(_ delivery: SessionDelivery, batch: DeliveryBatch? = nil) {
        enum Action { case write(Attachment), hop(Attachment), gone, held, end(String) }
        let action: Action = state.withLockedValue { state in
            if state.ended { return .gone }
            if state.ending {
                state.held.append(delivery)
                return .held
            }
            if let attachment = state.attachment {
                if state.hopsHandler != attachment.id {
                    state.hopsHandler = attachment.id
                    state.hopsInFlight = 0
                }
                if state.hopsInFlight == 0, attachment.eventLoop.inEventLoop { return .write(attachment) }
                state.hopsInFlight += 1
                return .hop(attachment)
            }
            guard state.management != nil else { return .gone }
            switch delivery {
            case .stanza(let stanza):
                state.management!.queue.append(Unacked(stanza: stanza))
            case .confirmed(let stanza, let acknowledged):
                state.management!.queue.append(Unacked(stanza: stanza, acknowledged: acknowledged))
            case .terminate(let error):
                return .end(error.description)
            }
            if state.management!.queue.count > state.management!.maxUnacked {
                return .end("too many stanzas arrived while detached")
            }
            return .held
        }
        switch action {
        case .write(let attachment):
            if let batch {
                batch.add(delivery, for: attachment.handler, id: attachment.id, on: attachment.eventLoop, hopped: false)
            } else {
                attachment.handler.value.receive(delivery)
            }
        case .hop(let attachment):
            if let batch {
                batch.add(delivery, for: attachment.handler, id: attachment.id, on: attachment.eventLoop, hopped: true)
            } else {
                let handler = attachment.handler
                attachment.eventLoop.execute { handler.value.receive(delivery, hopped: true) }
            }
        case .gone: handOn(delivery)
        case .held: break
        case .end(let reason): end(reason: reason)
        }
    }

    enum Recorded {
        /// Write `heldFirst` (XEP-0352: what waited while the client was inactive), then
        /// the delivery; `managed` if XEP-0198 counts them (an offline delivery's promise
        /// then waits for the acknowledgement, not the write).
        case send(managed: Bool, heldFirst: [XMLElement] = [])
        /// Held back for an inactive client (XEP-0352): not written, not counted.
        case heldWhileInactive
        /// Held, and the held queue was full: write all of it (the delivery included).
        case flushHeld([XMLElement], managed: Bool)
        /// The handler no longer holds the session: dispatch again.
        case notAttached
        /// The session ended: hand the delivery on.
        case ended
        /// Recorded, but the client let too many go unacknowledged.
        case overflow
    }

    /// The attached handler, on its loop, about to write `delivery`; `hopped` if it came
    /// as a task from `dispatch`.
    func record(_ delivery: SessionDelivery, by handler: ObjectIdentifier, hopped: Bool) -> Recorded {
        state.withLockedValue { state in
            if hopped, state.hopsHandler == handler, state.hopsInFlight > 0 { state.hopsInFlight -= 1 }
            if state.ended { return .ended }
            guard !state.ending, state.attachment?.id == handler else { return .notAttached }
            var heldFirst: [XMLElement] = []
            if state.inactive, case .stanza(let stanza) = delivery, !ClientStateQueue.isImportant(stanza) {
                state.waiting.hold(stanza, stampedBy: state.handle?.jid.bare.description)
                guard state.waiting.count > server.policy.clientStateQueueSize else { return .heldWhileInactive }
                let all = state.waiting.drain()
                return Self.recordSent(all, in: &state) ? .flushHeld(all, managed: state.management != nil) : .overflow
            }
            if !state.waiting.isEmpty, !(delivery.isTermination) {
                // Whatever is important goes out now, but after what waited, as Prosody's
                // mod_csi_simple does: holding back must never reorder a conversation (a
                // body after the chat state that preceded it, presence before a message that
                // assumes it).
                heldFirst = state.waiting.drain()
                guard Self.recordSent(heldFirst, in: &state) else { return .overflow }
            }
            guard state.management != nil else { return .send(managed: false, heldFirst: heldFirst) }
            switch delivery {
            case .stanza(let stanza):
                state.management!.queue.append(Unacked(stanza: stanza))
            case .confirmed(let stanza, let acknowledged):
                state.management!.queue.append(Unacked(stanza: stanza, acknowledged: acknowledged))
            case .terminate:
                return .send(managed: false)
            }
            return state.management!.queue.count > state.management!.maxUnacked ? .overflow : .send(managed: true, heldFirst: heldFirst)
        }
    }

    /// Counts stanzas about to be written (XEP-0198); false if that leaves too many unacknowledged.
    static func recordSent(_ stanzas: [XMLElement], in state: inout State) -> Bool {
        guard state.management != nil else { return true }
        for stanza in stanzas { state.management!.queue.append(Unacked(stanza: stanza)) }
        return state.management!.queue.count <= state.management!.maxUnacked
    }
}
