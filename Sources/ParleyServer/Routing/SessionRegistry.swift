import NIOConcurrencyHelpers
import ParleyCore

/// Every bound session on this server, by bare JID and resource: the one place routing asks
/// "who is online". Lookups take a lock for a few dictionary operations only; a session's own
/// work happens on its event loop.
public final class SessionRegistry: Sendable {
    private let accounts = NIOLockedValueBox([JID: [String: SessionHandle]]())

    public init() {}

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
        return accounts.withLockedValue { accounts in
            var resources = accounts[bare] ?? [:]
            for old in replacing { if resources[old.jid.resourcepart ?? ""] == old { resources[old.jid.resourcepart ?? ""] = nil } }
            if let existing = resources[resource] { return .resourceInUse(existing) }
            if maxPerAccount > 0, resources.count >= maxPerAccount { return .tooManySessions }
            resources[resource] = handle
            accounts[bare] = resources
            return nil
        }
    }

    public func unbind(_ handle: SessionHandle) {
        let bare = handle.jid.bare
        accounts.withLockedValue { accounts in
            guard let resource = handle.jid.resourcepart, accounts[bare]?[resource] == handle else { return }
            accounts[bare]?[resource] = nil
            if accounts[bare]?.isEmpty == true { accounts[bare] = nil }
        }
    }

    public func sessions(of bare: JID) -> [SessionHandle] {
        accounts.withLockedValue { accounts in accounts[bare].map { Array($0.values) } ?? [] }
    }

    public func session(_ full: JID) -> SessionHandle? {
        guard let resource = full.resourcepart else { return nil }
        return accounts.withLockedValue { $0[full.bare]?[resource] }
    }

    public var sessionCount: Int {
        accounts.withLockedValue { $0.values.reduce(0) { $0 + $1.count } }
    }

    public var allSessions: [SessionHandle] {
        accounts.withLockedValue { $0.values.flatMap { $0.values } }
    }
}
