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
        let eventLoop: any EventLoop

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
    }
}
