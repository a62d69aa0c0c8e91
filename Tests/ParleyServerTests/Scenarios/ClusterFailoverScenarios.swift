import Foundation
import ParleyCore
import ParleyServer
import PostgresNIO
import Testing

/// A node that stops renewing its lease: the others notice within the lease timeout, its
/// sessions leave routing on every node, and what its inbox still held goes to offline
/// storage, delivered once at the recipient's next login. The dead node is played by rows
/// written straight into the database (a lease, a session, then silence), as a process that
/// was killed leaves them; the child-process test (`ClusterKillTests`) kills real ones.
@Suite struct ClusterFailoverScenarios {
    @Test func aDeadNodesMessagesGoOfflineAndItsSessionsLeaveRouting() async throws {
        try await TestCluster.with { cluster in
            let (a, b) = (cluster.nodes[0], cluster.nodes[1])
            // "ghost" joins with Bob's only session, then never beats again.
            // The ghost's lease is renewed until the test lets it die.
            let beating = try await cluster.ghostNodeWithBobsSession(sessionID: 77)
            defer { beating.cancel() }
            try await a.waitForSession("bob@localhost/ghost", available: true)
            try await b.waitForSession("bob@localhost/ghost", available: true)

            // Alice's messages go to Bob's session on the ghost: into its inbox. Her round
            // trip comes back only once they are committed there.
            let alice = try await a.im("alice")
            for index in 1...3 {
                try await alice.sendMessage(to: "bob@localhost", id: "g\(index)", body: "to the ghost \(index)")
            }
            try await alice.sync()
            #expect(try await inboxCount(cluster, node: "ghost") == 3)
            beating.cancel()

            // The lease (1 s) runs out: the ghost is taken over, on every node at once.
            try await a.waitForSession("bob@localhost/ghost", present: false)
            try await b.waitForSession("bob@localhost/ghost", present: false)
            #expect(try await inboxCount(cluster, node: "ghost") == 0)
            #expect(try await cluster.sql("SELECT 1 FROM cluster_nodes WHERE node_id = 'ghost'").isEmpty)
            #expect(try await cluster.storages[0].offlineCount(for: "bob") == 3)

            // Bob's next login, on the other node: each message once, in order, as offline
            // messages (delayed).
            let bob = try await b.im("bob", "back")
            var messages: [XMLElement] = []
            while messages.count < 3 {
                let element = try await bob.nextElement()
                if element.name == "message" { messages.append(element) }
            }
            #expect(messages.map(\.id) == ["g1", "g2", "g3"])
            #expect(messages.allSatisfy { $0.firstChild("delay", namespace: IM.delay) != nil })
            #expect(messages.allSatisfy { $0.from == "alice@localhost/r" })
            let rest = try await bob.sync()
            #expect(rest.filter { $0.name == "message" }.isEmpty, "each message once")
        }
    }

    private func inboxCount(_ cluster: TestCluster, node: String) async throws -> Int64 {
        try await cluster.sql("SELECT count(*) FROM cluster_inbox WHERE node_id = \(node)").first!.decode(Int64.self)
    }
}
