import ParleyCore

/// One XEP-0198 session as the client keeps it across connections: what it sent that the
/// server has not yet acknowledged, and what it needs to resume.
struct ManagedSessionState {
    /// nil when the server enabled acknowledgements without resumption.
    var resumptionID: String?
    var jid: JID
    var counter: HandledCounter
    /// The server's last `h`: how many of our stanzas it has handled.
    private(set) var acknowledged: UInt32 = 0
    /// Sent, in order, and not acknowledged: stanza number `acknowledged + 1` first.
    private(set) var unacknowledged: [XMLElement] = []
    /// An `<r/>` is out and its `<a/>` has not come back: one at a time is enough, since
    /// the answer covers everything sent before it arrives.
    var acknowledgementRequested = false

    /// - Parameter acknowledged: the server's count so far; 0 for a new session.
    init(resumptionID: String?, jid: JID, counter: HandledCounter, acknowledged: UInt32 = 0) {
        self.resumptionID = resumptionID
        self.jid = jid
        self.counter = counter
        self.acknowledged = acknowledged
    }

    mutating func sent(_ stanza: XMLElement) {
        unacknowledged.append(stanza)
    }

    enum AcknowledgementError: Error, Equatable {
        /// The server claims more than was sent (XEP-0198 §4 `handled-count-too-high`).
        case tooHigh(h: UInt32, sent: UInt32)
    }

    /// Takes the server's `h`; returns the stanzas it newly acknowledges, oldest first. The
    /// counter wraps at 2^32, so the difference is taken modulo 2^32 too.
    mutating func acknowledge(_ h: UInt32) throws(AcknowledgementError) -> [XMLElement] {
        let newlyHandled = Int(h &- acknowledged)
        guard newlyHandled <= unacknowledged.count else {
            throw .tooHigh(h: h, sent: acknowledged &+ UInt32(truncatingIfNeeded: unacknowledged.count))
        }
        let handled = Array(unacknowledged.prefix(newlyHandled))
        unacknowledged.removeFirst(newlyHandled)
        acknowledged = h
        return handled
    }
}
