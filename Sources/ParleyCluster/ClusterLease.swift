import Foundation
import Logging
import ParleyCore
import ParleyServer
import PostgresNIO

/// Nodes' leases: each node renews its row in `cluster_nodes` every heartbeat; a row not
/// renewed within the lease timeout (by the database's clock, so nodes' clocks may differ)
/// belongs to a dead node. Whichever node deletes that row first takes the dead node over,
/// in the same transaction: the messages still in its inbox go to offline storage (stamped
/// as offline messages are), the rest of its inbox and its directory entries are removed,
/// and every node is told (`x|node`), so its sessions leave routing everywhere at once.
struct ClusterLease: Sendable {
    let node: String
    let client: PostgresClient
    let domain: JID
    let timeout: Duration
    let logger: Logger

    struct NodeIDInUse: Error, CustomStringConvertible {
        let node: String
        var description: String {
            "cluster node id '\(node)' is in use by a running node (its lease is being renewed); give each node its own cluster.node_id"
        }
    }

    private var timeoutSeconds: Double { Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18 }

    /// Joins the cluster: a previous run of this node (crashed, or restarted before its lease
    /// ran out) is taken over first. Waits up to one lease timeout for a live-looking lease
    /// of the same id to lapse, then refuses to start.
    func join() async throws -> Int64 {
        let incarnation = Int64.random(in: 1...Int64.max)
        let node = node
        let domain = domain
        let logger = logger
        let seconds = timeoutSeconds
        let deadline = ContinuousClock.now + timeout + .seconds(1)
        var previousBeat: Date? = nil
        while true {
            let beat = try await client.withConnection { connection in
                try await connection.query(
                    "SELECT heartbeat_at FROM cluster_nodes WHERE node_id = \(node) AND heartbeat_at > now() - make_interval(secs => \(seconds))",
                    logger: logger
                ).collect().first?.decode(Date.self)
            }
            guard let beat else { break }
            if let previousBeat, beat > previousBeat, ContinuousClock.now > deadline { throw NodeIDInUse(node: node) }
            if previousBeat == nil {
                logger.warning("this node's previous lease is still current; waiting for it to lapse", metadata: ["node": "\(node)"])
            }
            previousBeat = previousBeat ?? beat
            if ContinuousClock.now > deadline { throw NodeIDInUse(node: node) }
            try await Task.sleep(for: .milliseconds(250))
        }
        try await PostgresTransactions.run(client, logger: logger) { connection in
            _ = try await connection.query("DELETE FROM cluster_nodes WHERE node_id = \(node)", logger: logger).collect()
            // Its rooms stay its own: the first stanza for each loads it again.
            _ = try await Self.takeOver(node, heir: node, domain: domain, connection, logger: logger)
            _ = try await connection.query(
                "INSERT INTO cluster_nodes (node_id, incarnation) VALUES (\(node), \(incarnation))", logger: logger
            ).collect()
        }
        return incarnation
    }

    /// Renews the lease; false if the row is gone (others took this node for dead).
    func renew(incarnation: Int64) async throws -> Bool {
        let node = node
        let logger = logger
        let rows = try await client.withConnection { connection in
            try await connection.query(
                "UPDATE cluster_nodes SET heartbeat_at = now() WHERE node_id = \(node) AND incarnation = \(incarnation) RETURNING node_id",
                logger: logger
            ).collect()
        }
        return !rows.isEmpty
    }

    /// Takes over every node whose lease ran out; returns their ids with what `departing`
    /// kept of each (asked just before its takeover), and the rooms they held, now this node's.
    func reapExpired<Kept: Sendable>(
        departing: (String) -> Kept
    ) async throws -> (nodes: [(node: String, kept: Kept)], rooms: [(service: String, room: String)]) {
        let node = node
        let logger = logger
        let seconds = timeoutSeconds
        let expired = try await client.withConnection { connection in
            try await connection.query(
                """
                SELECT node_id FROM cluster_nodes WHERE node_id <> \(node) AND heartbeat_at < now() - make_interval(secs => \(seconds))
                UNION SELECT DISTINCT node_id FROM cluster_inbox WHERE node_id NOT IN (SELECT node_id FROM cluster_nodes)
                """, logger: logger
            ).collect().map { try $0.decode(String.self) }
        }
        var reaped: [(node: String, kept: Kept)] = []
        var rooms: [(service: String, room: String)] = []
        for dead in expired {
            // Before the takeover commits: its notice makes every node (this one too) forget them.
            let kept = departing(dead)
            let domain = domain
            let won = try await PostgresTransactions.run(client, logger: logger) {
                connection -> (rooms: [(service: String, room: String)], deletedNode: Bool)? in
                let stillRegistered = try await connection.query(
                    "SELECT 1 FROM cluster_nodes WHERE node_id = \(dead)", logger: logger
                ).collect().isEmpty == false
                if stillRegistered {
                    // The delete decides who takes it over: only one node's finds the row.
                    let deleted = try await connection.query(
                        """
                        DELETE FROM cluster_nodes WHERE node_id = \(dead) AND heartbeat_at < now() - make_interval(secs => \(seconds))
                        RETURNING node_id
                        """, logger: logger
                    ).collect()
                    guard !deleted.isEmpty else { return nil }
                }
                return (try await Self.takeOver(dead, heir: node, domain: domain, connection, logger: logger), stillRegistered)
            }
            if let won {
                logger.warning("cluster node's lease expired; took it over", metadata: ["node": "\(dead)", "rooms": "\(won.rooms.count)"])
                // Only the node whose delete removed the dead node's row speaks for its
                // sessions. Its row already gone (another node took it over a moment ago,
                // after this one listed it), this one only collects what is left; saying
                // its sessions are gone as well sent their contacts a second unavailable
                // presence.
                if won.deletedNode { reaped.append((dead, kept)) }
                rooms += won.rooms
            }
        }
        return (reaped, rooms)
    }

    /// Leaves the cluster (a graceful stop): what the inbox still holds goes offline.
    func leave() async throws {
        let node = node
        let domain = domain
        let logger = logger
        try await PostgresTransactions.run(client, logger: logger) { connection in
            _ = try await connection.query("DELETE FROM cluster_nodes WHERE node_id = \(node)", logger: logger).collect()
            // Its rooms go to the node that beat last; it loads each at the next stanza.
            let heir = try await connection.query(
                "SELECT node_id FROM cluster_nodes ORDER BY heartbeat_at DESC LIMIT 1", logger: logger
            ).collect().first?.decode(String.self)
            _ = try await Self.takeOver(node, heir: heir, domain: domain, connection, logger: logger)
        }
    }

    /// Inside the caller's transaction: `dead`'s inbox to offline storage, its entries out of
    /// the directory, and every node told. Rows are locked as read, so two nodes taking over
    /// the same inbox (an orphaned one) never store a message twice.
    ///
    /// `dead`'s rooms (`cluster_rooms`) and the stanzas for them still in its inbox go to
    /// `heir`, or are released when there is none; returns the rooms `heir` got.
    static func takeOver(
        _ dead: String, heir: String?, domain: JID, _ connection: PostgresConnection, logger: Logger
    ) async throws -> [(service: String, room: String)] {
        var rooms: [(service: String, room: String)] = []
        let roomKind = InboxKind.room.rawValue
        if let heir {
            if heir != dead {
                rooms = try await connection.query(
                    "UPDATE cluster_rooms SET node_id = \(heir) WHERE node_id = \(dead) RETURNING service, room", logger: logger
                ).collect().map { row in
                    let (service, room) = try row.decode((String, String).self)
                    return (service: service, room: room)
                }
            }
            // Claimed by a run that ended before serving them: served again (a restart's own).
            let moved = try await connection.query(
                "UPDATE cluster_inbox SET node_id = \(heir), claimed = false WHERE node_id = \(dead) AND kind = \(roomKind) RETURNING id",
                logger: logger
            ).collect()
            if !moved.isEmpty {
                _ = try await connection.query("SELECT pg_notify('parley_cluster', 'i|' || \(heir))", logger: logger).collect()
            }
        } else {
            _ = try await connection.query("DELETE FROM cluster_rooms WHERE node_id = \(dead)", logger: logger).collect()
        }
        let keepRoomRows = heir != nil
        let rows = try await connection.query(
            """
            SELECT id, target, kind, stanza, created_at FROM cluster_inbox
            WHERE node_id = \(dead) AND (kind <> \(roomKind) OR NOT \(keepRoomRows)) ORDER BY id FOR UPDATE
            """,
            logger: logger
        ).collect()
        var ids: [Int64] = []
        var users: [String] = []
        var stored: [String] = []
        var times: [Int64] = []
        for row in rows {
            let (id, target, kind, text, createdAt) = try row.decode((Int64, String, Int16, String, Int64).self)
            ids.append(id)
            guard kind == InboxKind.stanza.rawValue, let jid = try? JID(target), let user = jid.localpart,
                let message = StoredStanza.parse(text),
                let offline = OfflineModule.storedForm(of: message, domain: domain, at: Date(timeIntervalSince1970: Double(createdAt) / 1000))
            else { continue }
            users.append(user)
            stored.append(StoredStanza.serialize(offline))
            times.append(createdAt)
        }
        if !users.isEmpty {
            _ = try await connection.query(
                """
                INSERT INTO offline_messages (account_id, stanza, stored_at)
                SELECT accounts.id, x.s, x.t FROM unnest(\(users)::text[], \(stored)::text[], \(times)::int8[]) WITH ORDINALITY AS x(u, s, t, o)
                JOIN accounts ON accounts.username = x.u ORDER BY x.o
                """, logger: logger
            ).collect()
            // Their accounts may be online on other nodes already (they reconnected first).
            let owners = Array(Set(users))
            _ = try await connection.query(
                "SELECT pg_notify('parley_cluster', 'o|' || u) FROM unnest(\(owners)::text[]) AS u", logger: logger
            ).collect()
        }
        if !ids.isEmpty {
            _ = try await connection.query("DELETE FROM cluster_inbox WHERE id = ANY(\(ids))", logger: logger).collect()
        }
        _ = try await connection.query("DELETE FROM cluster_sessions WHERE node_id = \(dead)", logger: logger).collect()
        _ = try await connection.query("SELECT pg_notify('parley_cluster', 'x|' || \(dead))", logger: logger).collect()
        if !stored.isEmpty {
            logger.info("a departed node's undelivered messages went to offline storage", metadata: ["node": "\(dead)", "messages": "\(stored.count)"])
        }
        return rooms
    }
}
