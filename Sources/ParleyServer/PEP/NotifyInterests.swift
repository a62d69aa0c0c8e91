import NIOConcurrencyHelpers
import ParleyCore

/// Which PEP nodes each available resource wants notifications for: the nodes N whose
/// `N+notify` its entity capabilities list (XEP-0163 §4.3.3 filtered notifications). Feature
/// sets are cached by verified `ver`, so one query serves every client of the same build.
final class NotifyInterests: Sendable {
    private struct State {
        /// Verified `ver` → the nodes its features ask notifications for.
        var byVer: [String: Set<String>] = [:]
        var byResource: [JID: Set<String>] = [:]
        /// The `ver` each resource's interests were learnt from.
        var verOfResource: [JID: String] = [:]
        /// A `ver` being asked about → the resources that announced it meanwhile.
        var waiting: [String: [SessionHandle]] = [:]
    }

    private let state = NIOLockedValueBox(State())
    /// Bounds the cache a stream of made-up `ver`s could grow; past it, the cache restarts.
    let maxCachedVers: Int
    /// Called after any resource's interests changed (who gets which notifications).
    private let changed: @Sendable () -> Void

    init(maxCachedVers: Int = 10_000, changed: @escaping @Sendable () -> Void = {}) {
        self.maxCachedVers = maxCachedVers
        self.changed = changed
    }

    static func notifyNodes(in features: Set<String>) -> Set<String> {
        Set(features.compactMap { $0.hasSuffix("+notify") ? String($0.dropLast("+notify".count)) : nil })
    }

    func wants(_ resource: JID, _ node: String) -> Bool {
        state.withLockedValue { $0.byResource[resource]?.contains(node) ?? false }
    }

    func nodes(of resource: JID) -> Set<String> {
        state.withLockedValue { $0.byResource[resource] ?? [] }
    }

    /// Whether the resource's interests were learnt from `ver` already, so a presence that
    /// announces the same again needs nothing (clients resend caps with every presence).
    func isSettled(_ resource: JID, ver: String) -> Bool {
        state.withLockedValue { $0.byResource[resource] != nil && $0.verOfResource[resource] == ver }
    }

    /// Whether the resource's interests were learnt from its capabilities (even if empty); a
    /// resource that announced none is not recorded.
    func isKnown(_ resource: JID) -> Bool {
        state.withLockedValue { $0.byResource[resource] != nil }
    }

    func cached(_ ver: String) -> Set<String>? {
        state.withLockedValue { $0.byVer[ver] }
    }

    /// Records the resource's interests; returns the nodes it did not have before (whose
    /// last items it should now get). `fresh` forgets what it had (initial presence).
    @discardableResult
    func set(_ nodes: Set<String>, for resource: JID, ver: String? = nil, fresh: Bool) -> Set<String> {
        defer { changed() }
        return state.withLockedValue { state in
            let before = fresh ? [] : state.byResource[resource] ?? []
            if nodes.isEmpty, ver == nil {
                // No capabilities, no interests: an entry would say the same as none, at a
                // few hundred bytes for every idle session of a client that sends no caps.
                state.byResource[resource] = nil
                state.verOfResource[resource] = nil
            } else {
                state.byResource[resource] = nodes
                state.verOfResource[resource] = ver
            }
            return nodes.subtracting(before)
        }
    }

    /// Adds `session` to those waiting for `ver`; true if it is the first, which must ask.
    func wait(for ver: String, _ session: SessionHandle) -> Bool {
        state.withLockedValue { state in
            let first = state.waiting[ver] == nil
            state.waiting[ver, default: []].append(session)
            return first
        }
    }

    /// Ends the wait for `ver`, caching its nodes if it was verified; returns who waited.
    func resolve(_ ver: String, verified nodes: Set<String>?) -> [SessionHandle] {
        state.withLockedValue { state in
            if let nodes {
                if state.byVer.count >= maxCachedVers { state.byVer = [:] }
                state.byVer[ver] = nodes
            }
            return state.waiting.removeValue(forKey: ver) ?? []
        }
    }

    func forget(_ resource: JID) {
        defer { changed() }
        state.withLockedValue {
            $0.byResource[resource] = nil
            $0.verOfResource[resource] = nil
        }
    }
}
