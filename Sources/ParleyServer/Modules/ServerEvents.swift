import NIOConcurrencyHelpers
import ParleyCore

/// What happens to sessions, for modules that must react (presence broadcasts, offline
/// delivery) without the session or other modules knowing them.
public enum ServerEvent: Sendable {
    /// A session bound its resource and can receive stanzas.
    case sessionBound(SessionHandle)
    /// A bound session ended, for whatever reason; it is no longer routable.
    case sessionEnded(SessionHandle)
    /// An account was removed (in-band or by the administrator).
    case accountRemoved(username: String)
    /// A session broadcast available presence (`initial`: its first since it was bound or
    /// unavailable), with `from` stamped: what entity capabilities (XEP-0115) are read from.
    case availablePresence(SessionHandle, presence: XMLElement, initial: Bool)
    /// `subscriber` now has a subscription to `owner`'s presence (From or Both in the
    /// owner's roster): the owner approved it, or had pre-approved it.
    case presenceSubscriptionApproved(owner: JID, subscriber: JID)
    /// An item was published to a PEP node (XEP-0163), by its owner or the server.
    case pepItemPublished(owner: JID, node: String, itemID: String, payload: XMLElement)
    /// An item was retracted from a PEP node, or dropped to make room for a newer one.
    case pepItemRetracted(owner: JID, node: String, itemID: String)
    /// A PEP node was deleted with its items.
    case pepNodeDeleted(owner: JID, node: String)
}

/// A typed publish/subscribe bus. Subscribers run synchronously on the publisher's thread
/// and must hand longer work elsewhere.
public final class ServerEventBus: Sendable {
    private let subscribers = NIOLockedValueBox([@Sendable (ServerEvent) -> Void]())

    public init() {}

    public func subscribe(_ subscriber: @escaping @Sendable (ServerEvent) -> Void) {
        subscribers.withLockedValue { $0.append(subscriber) }
    }

    public func publish(_ event: ServerEvent) {
        for subscriber in subscribers.withLockedValue({ $0 }) { subscriber(event) }
    }
}
