import NIOConcurrencyHelpers
import ParleyCore
import ParleyStorage

/// Who gets an owner's notifications, kept between publishes: reading the owner's roster
/// and asking the session registry and the `+notify` interests about each contact cost a
/// storage round trip and some ten locks and hash lookups per contact for every publish,
/// although between two publishes they rarely change.
///
/// Two layers, each thrown away the moment what it was made from changes:
/// - the owner's contacts with a presence subscription (From or Both), parsed, per owner:
///   dropped when the store reports a change of that roster (any writer, through
///   `RosterChangeObserving`), when the account is removed, and when a session of the owner
///   binds (an account deleted by another process and re-created must not inherit the old
///   one's roster before the change feed reports the deletion);
/// - the sessions of the owner and of those contacts that want the node (`+notify`), per
///   owner, node and access model: valid while no session bound or ended anywhere, no
///   resource's interests changed and no roster changed, as counted by `generation`.
///
/// Availability is not cached: the caller filters on it at every publish, so a resource going
/// unavailable or available again needs no invalidation. Neither is blocking, which the
/// delivery policy decides per stanza. A fill that raced with a change is not kept: each
/// layer notes the counter it began with and stores only if it did not move.
///
/// Without a store that reports roster changes, nothing is cached.
final class PEPRecipients: Sendable {
    struct Contact: Sendable {
        let jid: JID
        let item: RosterItem
    }

    private struct FanoutKey: Hashable {
        let owner: JID
        let node: String
    }

    private struct Fanout {
        let generation: UInt64
        let accessModel: PEPNodeConfiguration.AccessModel
        let rosterGroupsAllowed: [String]
        let sessions: [SessionHandle]
    }

    private struct State {
        var generation: UInt64 = 0
        var rosters: [String: [Contact]] = [:]
        var fanouts: [FanoutKey: Fanout] = [:]
    }

    let enabled: Bool
    /// Bounds both layers (owners, and owner-node pairs); past it a layer starts afresh.
    let maxEntries: Int
    private let state = NIOLockedValueBox(State())

    init(enabled: Bool, maxEntries: Int = 10_000) {
        self.enabled = enabled
        self.maxEntries = maxEntries
    }

    /// Counts every change that may alter a fan-out; read before computing one.
    var generation: UInt64 { state.withLockedValue { $0.generation } }

    // MARK: Contacts

    func contacts(of username: String) -> [Contact]? {
        guard enabled else { return nil }
        return state.withLockedValue { $0.rosters[username] }
    }

    /// Keeps contacts read from the store, unless anything changed since `generation`.
    func keep(_ contacts: [Contact], of username: String, readSince generation: UInt64) {
        guard enabled else { return }
        state.withLockedValue { state in
            guard state.generation == generation else { return }
            if state.rosters.count >= maxEntries { state.rosters = [:] }
            state.rosters[username] = contacts
        }
    }

    // MARK: Fan-outs

    func sessions(owner: JID, node: String, configuration: PEPNodeConfiguration) -> [SessionHandle]? {
        guard enabled else { return nil }
        return state.withLockedValue { state in
            guard let fanout = state.fanouts[FanoutKey(owner: owner, node: node)], fanout.generation == state.generation,
                fanout.accessModel == configuration.accessModel, fanout.rosterGroupsAllowed == configuration.rosterGroupsAllowed
            else { return nil }
            return fanout.sessions
        }
    }

    func keep(
        _ sessions: [SessionHandle], owner: JID, node: String, configuration: PEPNodeConfiguration, computedSince generation: UInt64
    ) {
        guard enabled else { return }
        state.withLockedValue { state in
            guard state.generation == generation else { return }
            if state.fanouts.count >= maxEntries { state.fanouts = [:] }
            state.fanouts[FanoutKey(owner: owner, node: node)] = Fanout(
                generation: generation, accessModel: configuration.accessModel,
                rosterGroupsAllowed: configuration.rosterGroupsAllowed, sessions: sessions)
        }
    }

    // MARK: Invalidation

    /// `username`'s roster changed, or the account was removed, or it bound a session.
    func rosterChanged(_ username: String) {
        state.withLockedValue { state in
            state.generation &+= 1
            state.rosters[username] = nil
            state.fanouts = [:]
        }
    }

    /// A session bound or ended, or a resource's interests changed: every fan-out may differ.
    func sessionsChanged() {
        // Dropped rather than left to fail the check: they hold sessions that may have ended.
        state.withLockedValue { state in
            state.generation &+= 1
            state.fanouts = [:]
        }
    }
}
