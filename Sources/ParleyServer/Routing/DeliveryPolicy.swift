import ParleyCore

/// Whether one account may send a stanza to another: the hook through which blocking
/// (XEP-0191) is enforced, by the router for routed stanzas and by the presence module for
/// the broadcasts it makes itself.
public protocol DeliveryPolicy: Sendable {
    func verdict(from sender: JID, to recipient: JID, stanza: XMLElement) -> DeliveryVerdict
}

public enum DeliveryVerdict: Sendable, Equatable {
    case deliver
    /// Dropped without a word (presence from a blocked contact).
    case drop
    /// Refused with this error to the sender.
    case reject(StanzaError)
}

/// Everything may be delivered: the policy when no module restricts it.
public struct OpenDeliveryPolicy: DeliveryPolicy {
    public init() {}
    public func verdict(from sender: JID, to recipient: JID, stanza: XMLElement) -> DeliveryVerdict { .deliver }
}
