import NIOConcurrencyHelpers
import NIOCore
import ParleyCore

/// The router's view of one bound client session: its address, its presence state, and a way
/// to hand it a stanza from any thread. The session itself lives on its channel's event loop.
public final class SessionHandle: Sendable, Hashable, CustomStringConvertible {
    public let jid: JID
    public let id: UInt64
    public let remoteAddress: String
    let eventLoop: any EventLoop
    /// Completes when the session's connection has closed.
    public let closeFuture: EventLoopFuture<Void>
    private let state: NIOLockedValueBox<PresenceState>
    private let sink: @Sendable (SessionDelivery) -> Void

    struct PresenceState {
        var isAvailable = false
        var priority: Int8 = 0
    }

    init(
        jid: JID, id: UInt64, remoteAddress: String, eventLoop: any EventLoop,
        closeFuture: EventLoopFuture<Void>, sink: @escaping @Sendable (SessionDelivery) -> Void
    ) {
        self.closeFuture = closeFuture
        self.jid = jid
        self.id = id
        self.remoteAddress = remoteAddress
        self.eventLoop = eventLoop
        self.sink = sink
        self.state = NIOLockedValueBox(PresenceState())
    }

    /// Whether the session has sent available presence and not since gone unavailable
    /// (RFC 6121 §1.5 "available resource").
    public var isAvailable: Bool { state.withLockedValue { $0.isAvailable } }
    public var priority: Int8 { state.withLockedValue { $0.priority } }

    func setPresence(available: Bool, priority: Int8) {
        state.withLockedValue {
            $0.isAvailable = available
            $0.priority = priority
        }
    }

    /// Queues a stanza for the client; it is written on the session's own event loop.
    public func deliver(_ stanza: XMLElement) {
        sink(.stanza(stanza))
    }

    /// Ends the session with a stream error (for example `conflict` when replaced).
    public func terminate(_ error: StreamError) {
        sink(.terminate(error))
    }

    public var description: String { "\(jid) [\(remoteAddress)]" }

    public static func == (lhs: SessionHandle, rhs: SessionHandle) -> Bool { lhs.id == rhs.id }
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }
}

enum SessionDelivery: Sendable {
    case stanza(XMLElement)
    case terminate(StreamError)
}
