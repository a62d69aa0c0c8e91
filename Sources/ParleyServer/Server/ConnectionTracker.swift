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

    var open: [any Channel] { channels.withLockedValue { Array($0.values) } }
}

/// Sent through every connection's pipeline when the server begins to shut down; the
/// session answers with `<system-shutdown/>`.
public struct ServerShutdownEvent: Sendable {
    public init() {}
}
