import Foundation
import Logging
import ParleyCluster
import ParleyCore
import ParleyPostgres
@testable import ParleyServer
import ParleyStorage
import ParleyTestSupport
import PostgresNIO
import Testing

/// Two or three nodes of a cluster in this process, each a real server with its own
/// listeners, data directory, connection pool and `ClusterNode`, sharing one fresh
/// PostgreSQL database: what scenarios of cross-node routing run against. Leases are short
/// (200 ms beats, 1 s timeout) so that a node's death is noticed within a test's patience.
final class TestCluster: Sendable {
    let url: String
    let nodes: [TestServer]
    let members: [ClusterNode]
    let storages: [PostgresStorage]

    static let quiet = Logger(label: "parley.scenario.cluster", factory: { _ in SwiftLogNoOpLogHandler() })

    private init(url: String, nodes: [TestServer], members: [ClusterNode], storages: [PostgresStorage]) {
        self.url = url
        self.nodes = nodes
        self.members = members
        self.storages = storages
    }

    static func settings(_ index: Int) -> ClusterNode.Settings {
        ClusterNode.Settings(nodeID: "node-\(index)", heartbeatInterval: .milliseconds(200), leaseTimeout: .seconds(1))
    }

    static func with<T>(
        nodes count: Int = 2, accounts: [String: String] = TestServer.threeAccounts,
        services: (Int) -> [any HostedService] = { _ in [] },
        _ configure: @escaping (inout ServerConfiguration) -> Void = { _ in },
        _ body: (TestCluster) async throws -> T
    ) async throws -> T {
        let url = try await PostgresCluster.shared().createDatabase()
        var nodes: [TestServer] = []
        var members: [ClusterNode] = []
        var storages: [PostgresStorage] = []
        for index in 0..<count {
            let storage = try await PostgresStorage.open(url: url, logger: quiet)
            storages.append(storage)
            let member = ClusterNode(settings: settings(index), storage: storage, logger: quiet)
            members.append(member)
            nodes.append(
                try await TestServer.start(
                    accounts: index == 0 ? accounts : [:], hostedServices: services(index), storage: storage, cluster: member) { configuration in
                    configuration.cluster.enabled = true
                    configuration.sessions.accountChangePollInterval = .milliseconds(100)
                    configure(&configuration)
                })
        }
        let cluster = TestCluster(url: url, nodes: nodes, members: members, storages: storages)
        do {
            let result = try await body(cluster)
            await cluster.stop()
            return result
        } catch {
            await cluster.stop()
            throw error
        }
    }

    func stop() async {
        for node in nodes { await node.stop() }
        for storage in storages { await storage.close() }
    }

    /// A node "ghost" that no process runs, written straight into the database as a killed
    /// process leaves it: its lease, and Bob's session `bob@localhost/ghost` (available, with
    /// `interests` in its directory entry), announced to the nodes. The returned task renews
    /// the lease until it is cancelled; then the lease runs out as a dead node's does.
    func ghostNodeWithBobsSession(sessionID: Int64, interests: String = "") async throws -> Task<Void, Never> {
        let presence = "<presence xmlns='jabber:client' from='bob@localhost/ghost'/>"
        let version = try await sql(
            """
            WITH n AS (INSERT INTO cluster_nodes (node_id, incarnation) VALUES ('ghost', 1))
            INSERT INTO cluster_sessions (jid, node_id, session_id, account_id, version, available, priority, flags, notify, presence)
            VALUES ('bob@localhost/ghost', 'ghost', \(sessionID), NULL, nextval('cluster_session_versions'), true, 0, 0, \(interests), \(presence))
            RETURNING version
            """
        ).first!.decode(Int64.self)
        let notice = "s|\(version)|ghost|\(sessionID)||1|0|0|bob@localhost/ghost\n\(interests)\n\(presence)"
        _ = try await sql("SELECT pg_notify('parley_cluster', \(notice))")
        return Task {
            while !Task.isCancelled {
                _ = try? await self.sql("UPDATE cluster_nodes SET heartbeat_at = now() WHERE node_id = 'ghost'")
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    /// Runs one statement on the shared database (a test's own connection).
    func sql(_ query: PostgresQuery) async throws -> [PostgresRow] {
        let client = storages[0].postgresClient
        return try await client.withConnection { connection in
            try await connection.query(query, logger: Self.quiet).collect()
        }
    }
}

extension TestServer {
    /// Waits until this node routes to `jid` (a full JID) as the cluster says: bound somewhere
    /// (and, with `available`, in that presence state), or with `present: false`, gone.
    func waitForSession(_ jid: String, present: Bool = true, available: Bool? = nil) async throws {
        let target = try JID(jid)
        let deadline = ContinuousClock.now + TestClient.defaultTimeout
        while true {
            let session = running.context.sessions.session(target)
            let matches: Bool
            if present {
                matches = session != nil && (available == nil || session?.isAvailable == available)
            } else {
                matches = session == nil
            }
            if matches { return }
            guard ContinuousClock.now < deadline else {
                throw ScenarioFailure("\(jid) is \(session == nil ? "unknown" : "known") to this node, not as expected")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}
