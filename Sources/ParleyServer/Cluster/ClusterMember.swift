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
    /// Offline messages were stored for the account elsewhere (a departed node's inbox):
    /// this node's available sessions of it get them now rather than at their next login.
    public let offlineStored: @Sendable (JID) -> Void
    /// The node's block lists (XEP-0191), kept in memory: changes made on one node are
    /// read again by the others.
    public let blocking: BlockingModule?
    /// Offline storage, whose stores the cluster announces (`o|user`): a message stored
    /// because this node did not yet know of the recipient's new session elsewhere is then
    /// delivered there at once.
    public let offline: OfflineModule?
    /// The node's hosted services: they hear of sessions that end on other nodes too, and
    /// those with entities on one node at a time (`PlacedService`) get a placement.
    public let hostedServices: [any HostedService]
    /// A client resuming on another node asks for one of this node's resumable sessions
    /// (previd, user, account id): it is handed over if this node holds it.
    public let handOver: @Sendable (String, String, Int64?) async -> SessionHandOver?
    /// Sessions of a node that died, as this node (the one that took the node over) last
    /// knew them: their contacts and directed-presence recipients get unavailable presence.
    public let sessionsLost: @Sendable ([SessionHandle]) -> Void

    public init(
        domain: JID, sessions: SessionRegistry, router: StanzaRouter, eventLoop: any EventLoop, logger: Logger,
        offlineStored: @escaping @Sendable (JID) -> Void = { _ in }, blocking: BlockingModule? = nil,
        offline: OfflineModule? = nil, hostedServices: [any HostedService] = [],
        handOver: @escaping @Sendable (String, String, Int64?) async -> SessionHandOver? = { _, _, _ in nil },
        sessionsLost: @escaping @Sendable ([SessionHandle]) -> Void = { _ in }
    ) {
        self.hostedServices = hostedServices
        self.handOver = handOver
        self.sessionsLost = sessionsLost
        self.offline = offline
        self.blocking = blocking
        self.offlineStored = offlineStored
        self.domain = domain
        self.sessions = sessions
        self.router = router
        self.eventLoop = eventLoop
        self.logger = logger
    }
}
