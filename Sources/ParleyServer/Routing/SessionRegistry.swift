import NIOConcurrencyHelpers
import ParleyCore

/// Every bound session on this server, by bare JID and resource: the one place routing asks
/// "who is online". Lookups take a lock for a few dictionary operations only; a session's own
/// work happens on its event loop.
public final class SessionRegistry: Sendable {
    private let accounts = NIOLockedValueBox([JID: ResourceSessions]())
    /// The cluster this node belongs to, if any: told of every local bind and unbind.
    private let link = NIOLockedValueBox<(any ClusterLink)?>(nil)
    private let remoteObservers = NIOLockedValueBox([@Sendable () -> Void]())

    public init() {}

    /// Joins the registry to a cluster (once, at start-up, before any session binds).
    public func attach(_ cluster: any ClusterLink) {
        link.withLockedValue { $0 = cluster }
    }

    /// The cluster link, for new local sessions' handles.
    var cluster: (any ClusterLink)? { link.withLockedValue { $0 } }

    public enum Conflict: Sendable {
        /// Another session holds the resource; it is returned so the caller can end it.
        case resourceInUse(SessionHandle)
        /// The account already has its maximum number of sessions.
        case tooManySessions
    }

    /// Adds `handle` under its full JID. `replacing` names the session the caller decided to
    /// end for it (the same resource, or every other one in single-device mode); it is
    /// removed in the same step so no stanza can be routed to a session that is going away.
    public func bind(
        _ handle: SessionHandle, replacing: Set<SessionHandle> = [], maxPerAccount: Int = 0
    ) -> Conflict? {
        guard let resource = handle.jid.resourcepart else { return nil }
        let bare = handle.jid.bare
        let conflict: Conflict? = accounts.withLockedValue { accounts in
            var resources = accounts[bare] ?? ResourceSessions()
            for old in replacing { if resources[old.jid.resourcepart ?? ""] == old { resources[old.jid.resourcepart ?? ""] = nil } }
            if let existing = resources[resource] { return .resourceInUse(existing) }
            if maxPerAccount > 0, resources.count >= maxPerAccount { return .tooManySessions }
            resources[resource] = handle
            accounts[bare] = resources
            return nil
        }
        if conflict == nil, !handle.isRemote, let cluster = handle.cluster { cluster.localSessionBound(handle) }
        return conflict
    }

    /// `moved`: the session goes on on another node of the cluster (handed over).
    public func unbind(_ handle: SessionHandle, moved: Bool = false) {
        let bare = handle.jid.bare
        accounts.withLockedValue { accounts in
            guard let resource = handle.jid.resourcepart, accounts[bare]?[resource] == handle else { return }
            accounts[bare]?[resource] = nil
            if accounts[bare]?.isEmpty == true { accounts[bare] = nil }
        }
        // Told even when another login took the resource meanwhile: the cluster removes only
        // this session's own entry.
        if !handle.isRemote, let cluster = handle.cluster {
            if moved { cluster.localSessionMoved(handle) } else { cluster.localSessionEnded(handle) }
        }
    }

    /// A session on another node, as the cluster learned of it: it takes the resource from
    /// whatever held it here (the newest bind wins cluster-wide); returns what it displaced.
    @discardableResult
    public func bindRemote(_ handle: SessionHandle) -> SessionHandle? {
        guard let resource = handle.jid.resourcepart else { return nil }
        return accounts.withLockedValue { accounts in
            let previous = accounts[handle.jid.bare]?[resource]
            accounts[handle.jid.bare, default: ResourceSessions()][resource] = handle
            return previous
        }
    }

    /// Removes a remote session, if it is still the one bound under its JID.
    public func unbindRemote(_ handle: SessionHandle) {
        let bare = handle.jid.bare
        accounts.withLockedValue { accounts in
            guard let resource = handle.jid.resourcepart, accounts[bare]?[resource] == handle else { return }
            accounts[bare]?[resource] = nil
            if accounts[bare]?.isEmpty == true { accounts[bare] = nil }
        }
    }

    /// `observer` hears of every change of the remote sessions (bound, ended, or their
    /// presence changed): what caches of recipients must forget.
    public func observeRemoteChanges(_ observer: @escaping @Sendable () -> Void) {
        remoteObservers.withLockedValue { $0.append(observer) }
    }

    /// Called by the cluster after it changed remote sessions.
    public func remoteSessionsChanged() {
        for observer in remoteObservers.withLockedValue({ $0 }) { observer() }
    }

    /// The sessions bound on this node.
    public var localSessions: [SessionHandle] {
        accounts.withLockedValue { $0.values.flatMap { $0.values.filter { !$0.isRemote } } }
    }

    public func sessions(of bare: JID) -> [SessionHandle] {
        accounts.withLockedValue { accounts in accounts[bare].map { Array($0.values) } ?? [] }
    }

    /// The sessions of an account that `excluded` leaves out, without an array when none is
    /// left (the common case on the message path: the one session already served).
    func sessions(of bare: JID, except excluded: (SessionHandle) -> Bool) -> [SessionHandle] {
        accounts.withLockedValue { accounts in
            guard let resources = accounts[bare] else { return [] }
            var found: [SessionHandle] = []
            for session in resources.values where !excluded(session) { found.append(session) }
            return found
        }
    }

    public func session(_ full: JID) -> SessionHandle? {
        guard let resource = full.resourcepart else { return nil }
        return accounts.withLockedValue { $0[full.bare]?[resource] }
    }

    /// The session bound at the `to` of each delivery in `deliveries` for which `asked` says
    /// so (nil for the others, or where there is none), in one look at the registry: a room's
    /// message goes to every occupant's session, and a lock taken per copy, from every event
    /// loop at once, was a measurable share. The addresses are read where they lie.
    func sessions(at deliveries: UnsafeBufferPointer<HostedDelivery>, where asked: [Bool]) -> [SessionHandle?] {
        accounts.withLockedValue { accounts in
            var found = [SessionHandle?](repeating: nil, count: deliveries.count)
            var last: Int?
            for index in deliveries.indices where asked[index] {
                guard let resource = deliveries[index].to.resourcepart else { continue }
                // A newcomer to a room gets every occupant's presence in a row.
                if let last, deliveries[last].to == deliveries[index].to {
                    found[index] = found[last]
                } else {
                    found[index] = accounts[deliveries[index].to.bare]?[resource]
                }
                last = index
            }
            return found
        }
    }

    public var sessionCount: Int {
        accounts.withLockedValue { $0.values.reduce(0) { $0 + $1.count } }
    }

    public var allSessions: [SessionHandle] {
        accounts.withLockedValue { $0.values.flatMap { $0.values } }
    }
}
