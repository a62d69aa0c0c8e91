import Logging
import NIOCore
import ParleyCore

/// A cluster as the server starts and stops it: `RunningServer` attaches it to the session
/// registry and starts it before any listener accepts a client, and stops it once the
/// node's own sessions have ended.
public protocol ClusterMember: ClusterLink {
    func start(_ host: ClusterHost) async throws
    func stop() async
}

/// The parts of a node its cluster works with.
public struct ClusterHost: Sendable {
    public let domain: JID
    public let sessions: SessionRegistry
    /// Messages for a session that ended before a stanza for it arrived go through it again
    /// (`redeliver`), like a message to the bare JID.
    public let router: StanzaRouter
    /// Where remote sessions' close futures live.
    public let eventLoop: any EventLoop
    public let logger: Logger

    public init(domain: JID, sessions: SessionRegistry, router: StanzaRouter, eventLoop: any EventLoop, logger: Logger) {
        self.domain = domain
        self.sessions = sessions
        self.router = router
        self.eventLoop = eventLoop
        self.logger = logger
    }
}
