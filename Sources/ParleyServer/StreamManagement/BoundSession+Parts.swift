import NIOCore
import ParleyCore

/// The parts a `BoundSession` is made of: what it keeps of a sent stanza, the connection it
/// is attached to, and its XEP-0198 state.
extension BoundSession {
    struct Unacked: Sendable {
        var stanza: XMLElement
        /// An offline delivery: succeeds when the client acknowledges the stanza, fails if the
        /// session ends first (so the message stays in storage).
        var acknowledged: EventLoopPromise<Void>?
    }

    struct Attachment: Sendable {
        let id: ObjectIdentifier
        let handler: NIOLoopBound<C2SSessionHandler>
        /// The handler's loop (kept once, in `handler`).
        var eventLoop: any EventLoop { handler.eventLoop }

        func run(_ body: @escaping @Sendable (C2SSessionHandler) -> Void) {
            if eventLoop.inEventLoop {
                body(handler.value)
            } else {
                let handler = handler
                eventLoop.execute { body(handler.value) }
            }
        }
    }

    /// XEP-0198 state, from `<enable/>` on.
    struct Management: Sendable {
        /// Stanzas handled from the client (the `h` we report).
        var inbound: UInt32 = 0
        var queue = UnackedQueue<Unacked>()
        var resumptionID: String?
        var resumeTimeout: TimeAmount
        var maxUnacked: Int
        /// The archive's sequence numbers of messages counted in `inbound` that no
        /// acknowledgement has yet found committed: `h` may count them only once they are.
        var unconfirmedArchive: ClosedRange<UInt64>?
        /// While detached: ends the session unless it is resumed in time. Only a session
        /// with a resumption id is ever detached, so it lives here, not in every session.
        var detachTimer: Scheduled<Void>?
        var detachGeneration = 0
    }

    /// Where `State` keeps its `Management`: a session without XEP-0198 then carries one
    /// pointer instead of the whole state inline (about 140 bytes).
    final class ManagementBox: @unchecked Sendable {
        /// nil only while `State.management` is being changed in place.
        var value: Management?

        init(_ value: Management) {
            self.value = value
        }
    }
}
