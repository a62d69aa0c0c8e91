import NIOConcurrencyHelpers

/// What happens to sessions, for modules that must react (presence broadcasts, offline
/// delivery) without the session or other modules knowing them.
public enum ServerEvent: Sendable {
    /// A session bound its resource and can receive stanzas.
    case sessionBound(SessionHandle)
    /// A bound session ended, for whatever reason; it is no longer routable.
    case sessionEnded(SessionHandle)
    /// An account was removed (in-band or by the administrator).
    case accountRemoved(username: String)
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
