/// What routing one stanza from a local session left for that session to wait on.
public struct RouteResult: Sendable {
    /// Work still running for the stanza (presence handling, an offline write, archive
    /// backpressure): the session handles nothing but further messages until it is done.
    public var pending: Task<Void, Never>?
    /// The archive's sequence numbers of the message's rows, if it was archived: only an
    /// XEP-0198 acknowledgement waits for them, so a session that never asks pays nothing.
    public var archived: ClosedRange<UInt64>?
    /// The message itself waits in `pending` (`RoutedMessage.deliverAfter`): the session
    /// handles nothing after it until it went out, so its stanzas stay in order.
    public var holdsStream = false

    public init(pending: Task<Void, Never>? = nil, archived: ClosedRange<UInt64>? = nil) {
        self.pending = pending
        self.archived = archived
    }
}
