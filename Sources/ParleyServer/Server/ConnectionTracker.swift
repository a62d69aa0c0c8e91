import NIOConcurrencyHelpers
import NIOCore

/// Every open client connection, authenticated or not, so shutdown can reach them all.
final class ConnectionTracker: Sendable {
    private let channels = NIOLockedValueBox([ObjectIdentifier: any Channel]())

    func track(_ channel: any Channel) {
        let key = ObjectIdentifier(channel)
        channels.withLockedValue { $0[key] = channel }
        channel.closeFuture.whenComplete { [self] _ in
            channels.withLockedValue { _ = $0.removeValue(forKey: key) }
        }
    }

    /// For a channel whose `C2SSessionHandler` is in its pipeline: the handler calls
    /// `untrack` when it is removed, which NIO does for every handler when the channel
    /// closes. A callback on each close future cost every connection about 70 bytes.
    func trackUntilSessionHandlerRemoved(_ channel: any Channel) {
        let key = ObjectIdentifier(channel)
        channels.withLockedValue { $0[key] = channel }
    }

    func untrack(_ channel: any Channel) {
        let key = ObjectIdentifier(channel)
        channels.withLockedValue { _ = $0.removeValue(forKey: key) }
    }

    var open: [any Channel] { channels.withLockedValue { Array($0.values) } }
}

/// Sent through every connection's pipeline when the server begins to shut down; the
/// session answers with `<system-shutdown/>`, or sends the client elsewhere (`shutdown.redirect_*`).
public struct ServerShutdownEvent: Sendable {
    /// `<see-other-host>` for streams whose framing has no redirect of its own (TCP).
    public var redirectHost: String?
    /// For a WebSocket: its framing handler puts it in the `<close/>` it writes.
    public var redirectWebSocketURI: String?
    /// For a BOSH session: its connection manager ends it with `see-other-uri` naming this.
    public var redirectBOSHURI: String?
    /// A transport below the session has taken the redirect over (the WebSocket framing's
    /// `see-other-uri`): the session only closes its stream, which the transport marks.
    public var redirectedByTransport = false

    public init(redirectHost: String? = nil, redirectWebSocketURI: String? = nil) {
        self.redirectHost = redirectHost
        self.redirectWebSocketURI = redirectWebSocketURI
    }

    public init(_ shutdown: ServerConfiguration.Shutdown) {
        self.init(redirectHost: shutdown.redirectHost, redirectWebSocketURI: shutdown.redirectWebSocketURI)
        redirectBOSHURI = shutdown.redirectBOSHURI
    }
}
