import Logging
import NIOConcurrencyHelpers
import NIOCore
import ParleyCore
import ParleyServer

/// This node's copy of the other nodes' part of the session directory: every session bound
/// elsewhere is a remote `SessionHandle` in the node's `SessionRegistry`, with the presence
/// its node last wrote, so routing reads it like a local one. Changes arrive as notices in
/// commit order; entries carry the directory's version, so a snapshot read while notices
/// were queued never takes an entry back to an older state.
final class ClusterDirectory: Sendable {
    private struct Entry {
        let handle: SessionHandle
        let node: String
        let sessionID: Int64
        var version: Int64
        let closed: EventLoopPromise<Void>
    }

    let node: String
    private let host: ClusterHost
    private unowned(unsafe) let link: any ClusterLink
    private let entries = NIOLockedValueBox([String: Entry]())

    init(node: String, host: ClusterHost, link: any ClusterLink) {
        self.node = node
        self.host = host
        self.link = link
    }

    /// Remote sessions known, for tests and the metrics.
    var count: Int { entries.withLockedValue { $0.count } }

    func apply(_ entry: SessionEntry) {
        guard entry.node != node, let jid = try? JID(entry.jid), jid.isFull else { return }
        enum Step { case update(SessionHandle), replace(old: Entry?), none }
        let step: Step = entries.withLockedValue { entries in
            if let existing = entries[entry.jid], existing.node == entry.node, existing.sessionID == entry.sessionID {
                guard entry.version > existing.version else { return .none }
                entries[entry.jid]?.version = entry.version
                return .update(existing.handle)
            }
            return .replace(old: entries[entry.jid])
        }
        switch step {
        case .none:
            return
        case .update(let handle):
            handle.withPresence { $0.clusterView = entry.view }
            host.sessions.remoteSessionsChanged()
        case .replace(let old):
            let closed = host.eventLoop.makePromise(of: Void.self)
            let handle = SessionHandle.remote(
                jid: jid, node: entry.node, accountID: entry.accountID, eventLoop: host.eventLoop, closeFuture: closed.futureResult,
                link: link)
            handle.withPresence { $0.clusterView = entry.view }
            let raced = entries.withLockedValue { entries -> Bool in
                // Another notice for this JID got in meanwhile: the listener is serial, so only
                // a resync can do that; keep the newer.
                if let current = entries[entry.jid], current.version > entry.version { return true }
                entries[entry.jid] = Entry(
                    handle: handle, node: entry.node, sessionID: entry.sessionID, version: entry.version, closed: closed)
                return false
            }
            if raced {
                closed.succeed(())
                return
            }
            if let old {
                host.sessions.unbindRemote(old.handle)
                old.closed.succeed(())
                tellServices(old.handle.jid)
            }
            // The newest bind of a resource wins cluster-wide: a local session that held it
            // (both bound at once on two nodes) gives way, as a replaced session does.
            if let displaced = host.sessions.bindRemote(handle), !displaced.isRemote {
                displaced.terminate(StreamError(.conflict, text: "Replaced by a new login with the same resource."))
            }
            host.sessions.remoteSessionsChanged()
        }
    }

    /// `moved`: handed over to another node, where it goes on (rooms keep the occupant).
    func ended(node: String, sessionID: Int64, jid: String, moved: Bool = false) {
        let removed: Entry? = entries.withLockedValue { entries in
            guard let entry = entries[jid], entry.node == node, entry.sessionID == sessionID else { return nil }
            entries[jid] = nil
            return entry
        }
        if let removed { remove(removed, ended: !moved) }
    }

    func nodeGone(_ gone: String) {
        let removed: [Entry] = entries.withLockedValue { entries in
            let gone = entries.values.filter { $0.node == gone }
            for entry in gone { entries[entry.handle.jidString] = nil }
            return gone
        }
        if !removed.isEmpty {
            host.logger.info("cluster node gone; its sessions left routing", metadata: ["node": "\(gone)", "sessions": "\(removed.count)"])
        }
        for entry in removed { remove(entry, ended: false) }
        // Lost rather than ended: a room tells its occupants why they went (333).
        let lost = removed.map(\.handle.jid)
        for service in host.hostedServices {
            if let placed = service as? any PlacedService {
                placed.sessionsLost(lost)
            } else {
                for jid in lost { service.sessionEnded(jid) }
            }
        }
    }

    /// The sessions this node knows of on `node`, as last written.
    func sessions(on node: String) -> [SessionHandle] {
        entries.withLockedValue { entries in entries.values.filter { $0.node == node }.map(\.handle) }
    }

    /// Replaces the whole view with `rows` (the table as read after LISTEN started).
    func resync(_ rows: [SessionEntry]) {
        let present = Set(rows.map(\.jid))
        let stale: [Entry] = entries.withLockedValue { entries in
            let stale = entries.values.filter { !present.contains($0.handle.jidString) }
            for entry in stale { entries[entry.handle.jidString] = nil }
            return stale
        }
        for entry in stale { remove(entry) }
        for row in rows { apply(row) }
    }

    /// Forgets every remote session (the node is leaving).
    func clear() {
        let all = entries.withLockedValue { entries in
            defer { entries = [:] }
            return Array(entries.values)
        }
        for entry in all { remove(entry, ended: false) }
    }

    /// `ended`: the session is over (not only this node's view of it, as when it leaves).
    private func remove(_ entry: Entry, ended: Bool = true) {
        host.sessions.unbindRemote(entry.handle)
        entry.closed.succeed(())
        host.sessions.remoteSessionsChanged()
        if ended { tellServices(entry.handle.jid) }
    }

    /// Hosted services hear of a session that ended elsewhere as of a local one: a room held
    /// here sees its occupant leave, whichever node it was on.
    private func tellServices(_ jid: JID) {
        for service in host.hostedServices { service.sessionEnded(jid) }
    }
}
