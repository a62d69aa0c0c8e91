import NIOCore
import ParleyCore

/// What a node of a cluster (ParleyCluster) is to the rest of the server. ParleyServer never
/// imports the cluster: it tells the link about its own sessions, and the link puts the
/// sessions of the other nodes into the `SessionRegistry` as remote `SessionHandle`s, so the
/// router, presence, carbons and roster pushes decide exactly as they would for local ones
/// and only the last hop (a stanza written to the other node's inbox) differs.
///
/// On a single node there is no link, and nothing on the hot path asks for one.
public protocol ClusterLink: AnyObject, Sendable {
    /// A local session was bound (its resource is now taken cluster-wide).
    func localSessionBound(_ session: SessionHandle)
    /// What the cluster sees of a local session changed (`SessionPresence.ClusterView`).
    func localSessionChanged(_ session: SessionHandle)
    /// A local session ended and left routing.
    func localSessionEnded(_ session: SessionHandle)
    /// A local session left routing here because another node took it over (XEP-0198
    /// resumption there): it has not ended, so rooms keep it as an occupant.
    func localSessionMoved(_ session: SessionHandle)
    /// Hands `stanza` to a session on another node. The task completes once the stanza is
    /// committed to that node's inbox: a sender's acknowledgement waits for it.
    func forward(_ stanza: XMLElement, to session: SessionHandle) -> Task<Void, Never>
    /// Ends a session on another node (a login elsewhere replaced it).
    func terminate(_ session: SessionHandle, _ error: StreamError)
    /// A client resumes (XEP-0198) a session this node does not hold: asks `nodes` (those
    /// holding sessions of its account) for it; the one that has it hands it over. nil if
    /// none does (or none answers in time).
    func takeOverSession(previd: String, user: String, accountID: Int64?, from nodes: [String]) async -> SessionTransfer?
}

extension SessionPresence {
    /// The part of a session's presence other nodes route by: its availability and
    /// priority (RFC 6121 §8), what probes are answered with, and which pushes it gets.
    public struct ClusterView: Sendable, Equatable {
        public var isAvailable: Bool
        public var priority: Int8
        public var lastPresence: XMLElement?
        public var flags: Flags
        /// PEP nodes the session wants notifications of (XEP-0163 §4.3.3).
        public var notifyNodes: Set<String>
        /// Recipients of its directed presence (RFC 6121 §4.6.3): if its node dies, the node
        /// that takes it over tells them it is unavailable.
        public var directedPresence: Set<JID>

        public struct Flags: OptionSet, Sendable, Equatable {
            public let rawValue: Int32
            public init(rawValue: Int32) { self.rawValue = rawValue }
            public static let carbons = Flags(rawValue: 1)
            public static let rosterPushes = Flags(rawValue: 2)
            public static let blocklistPushes = Flags(rawValue: 4)
        }

        public init(
            isAvailable: Bool, priority: Int8, lastPresence: XMLElement?, flags: Flags, notifyNodes: Set<String> = [],
            directedPresence: Set<JID> = []
        ) {
            self.notifyNodes = notifyNodes
            self.directedPresence = directedPresence
            self.isAvailable = isAvailable
            self.priority = priority
            self.lastPresence = lastPresence
            self.flags = flags
        }
    }

    public var clusterView: ClusterView {
        get {
            var flags = ClusterView.Flags()
            if wantsCarbons { flags.insert(.carbons) }
            if wantsRosterPushes { flags.insert(.rosterPushes) }
            if wantsBlocklistPushes { flags.insert(.blocklistPushes) }
            return ClusterView(
                isAvailable: isAvailable, priority: priority, lastPresence: lastPresence, flags: flags, notifyNodes: notifyNodes,
                directedPresence: Set(directedPresence))
        }
        set {
            isAvailable = newValue.isAvailable
            priority = newValue.priority
            lastPresence = newValue.lastPresence
            wantsCarbons = newValue.flags.contains(.carbons)
            wantsRosterPushes = newValue.flags.contains(.rosterPushes)
            wantsBlocklistPushes = newValue.flags.contains(.blocklistPushes)
            notifyNodes = newValue.notifyNodes
            directedPresence = DirectedPresenceRecipients(newValue.directedPresence)
        }
    }
}
