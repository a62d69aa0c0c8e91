import Foundation
import ParleyCore
import Testing

/// The cluster's promise, end to end with real processes: three `parleyd` nodes on one
/// PostgreSQL behind HAProxy, 20 clients spread over them through it. Every pair exchanges
/// presence and messages, two users on different nodes become friends over the wire; then
/// one node is SIGKILLed in the middle of a round of messages. Its clients sign in again
/// through HAProxy (landing on the others), and every message whose sender saw it
/// acknowledged (XEP-0198) reaches its recipient exactly once, as the client sees messages
/// (one per XEP-0359 stanza-id): live, from offline storage, or from the archive. A room
/// with occupants on every node, held by the node that dies, goes on on another node for the
/// occupants that survive (`ClusterKillRoom` says what is checked there).
@Suite(.serialized) struct ClusterKillTests {
    static let users = 20

    @Test(.timeLimit(.minutes(5))) func noAcknowledgedMessageIsLostWhenANodeIsKilled() async throws {
        let cluster = try await ClusterProcesses(nodes: 3)
        let names = try await cluster.createAccounts(Self.users, except: ("u00", "u01"))
        for index in 0..<3 { try await cluster.startNode(index) }
        try await cluster.startProxy()
        // Stopped before returning: a task started by a defer may not run before the test
        // process exits, which left the surviving nodes and HAProxy running.
        var stopped = false
        defer { if !stopped { Task { await cluster.stopAll() } } }

        let peers = names.map { ClusterPeer(user: $0, port: cluster.proxyPort, fingerprint: cluster.fingerprint) }
        for peer in peers { try await peer.connect() }
        var nodeOf: [String: String] = [:]
        for peer in peers {
            nodeOf[peer.user] = try await waitForNode(cluster, peer.jid)
        }
        let counts = Dictionary(grouping: nodeOf.values, by: { $0 }).mapValues(\.count)
        #expect(counts.count == 3, "clients on every node: \(counts)")

        // Presence between every subscribed pair, whichever nodes they are on: a broadcast
        // once every node knows every session (initial presences of two contacts logging in
        // on two nodes at the same moment can cross unseen, docs/cluster.md).
        try await Task.sleep(for: .seconds(1))
        for peer in peers { try await peer.sendStanza("<presence><status>here</status></presence>") }
        try await waitUntil("everyone sees everyone available", seconds: 30) {
            peers.allSatisfy { peer in
                peers.filter { $0 !== peer && !Self.isUnsubscribedPair(peer.user, $0.user) }.allSatisfy {
                    peer.availableFrom.contains($0.jid)
                }
            }
        }

        // A friend request across nodes (u00 and u01 start as strangers).
        let (u00, u01) = (peers[0], peers[1])
        try await u00.sendStanza("<presence to='u01@localhost' type='subscribe'/>")
        try await u01.sendStanza("<presence to='u00@localhost' type='subscribed'/>")
        try await u01.sendStanza("<presence to='u00@localhost' type='subscribe'/>")
        try await u00.sendStanza("<presence to='u01@localhost' type='subscribed'/>")
        try await waitUntil("the new friends see each other", seconds: 20) {
            u00.availableFrom.contains(u01.jid) && u01.availableFrom.contains(u00.jid)
        }

        // The room, held by the node that is going to die (the one with the most clients).
        let victim = counts.max { $0.value < $1.value }!.key
        let victimIndex = Int(victim.dropFirst("node-".count))!
        let room = try await ClusterKillRoom.open(peers, nodeOf: nodeOf, holder: victim)

        // Round 1: every pair, both ways.
        try await round(1, peers)
        try await waitUntil("round 1 acknowledged", seconds: 30) {
            peers.allSatisfy { peer in peers.filter { $0 !== peer }.allSatisfy { peer.acknowledged.contains(Self.id(1, peer.user, $0.user)) } }
        }

        // Round 2, and the node with the most clients dies in the middle of it.
        let killedAt = Date().addingTimeInterval(-5)
        let sending = Task { try? await round(2, peers, pause: .milliseconds(3)) }
        let speaking = Task { await room.round(2, peers, count: 6, pause: .milliseconds(60)) }
        try await Task.sleep(for: .milliseconds(150))
        cluster.kill(victimIndex)
        await sending.value
        await speaking.value
        let orphaned = peers.filter { nodeOf[$0.user] == victim }
        try await waitUntil("the killed node's clients notice", seconds: 20) { orphaned.allSatisfy { !$0.isConnected } }
        for peer in orphaned { try await peer.reconnect(catchUpSince: killedAt) }
        for peer in orphaned {
            let now = try await waitForNode(cluster, peer.jid)
            #expect(now != victim, "\(peer.user) came back on a live node")
        }

        // Round 3 with everyone back; the room goes on for its surviving occupants.
        try await round(3, peers)
        await room.round(3, room.survivors, count: 2, pause: .milliseconds(60))
        try await waitUntil("round 3 acknowledged", seconds: 30) {
            peers.allSatisfy { peer in peers.filter { $0 !== peer }.allSatisfy { peer.acknowledged.contains(Self.id(3, peer.user, $0.user)) } }
        }

        // Every acknowledged message arrives, once per stanza-id.
        let acknowledged = peers.flatMap { peer in peer.acknowledged.filter { $0.hasPrefix("r") }.map { (peer, $0) } }
        #expect(acknowledged.count > 2 * Self.users * (Self.users - 1), "rounds 1 and 3 acknowledged, and part of 2")
        try await waitUntil("every acknowledged message arrived", seconds: 60) {
            acknowledged.allSatisfy { _, id in peers.first { $0.user == Self.recipient(of: id) }!.received[id] != nil }
        }
        var duplicates: [String] = []
        for peer in peers {
            for (id, copies) in peer.received where id.hasPrefix("r") && Set(copies.stanzaIDs).count != 1 {
                duplicates.append("\(id): \(copies.stanzaIDs)")
            }
        }
        #expect(duplicates.isEmpty, "messages that reached a client as two different messages: \(duplicates.prefix(10))")
        let missing = acknowledged.filter { _, id in peers.first { $0.user == Self.recipient(of: id) }!.received[id] == nil }
        #expect(missing.isEmpty)
        // Only a message between two clients of the killed node may have needed the archive
        // (it lived in that process's memory alone); every other one came through the
        // inboxes or offline storage.
        let archivedOnly = peers.flatMap { peer in peer.received.filter { $0.key.hasPrefix("r") && $0.value.viaArchive > 0 }.map(\.key) }
        let crossNode = archivedOnly.filter { id in
            let parts = id.split(separator: "-").map(String.init)
            return nodeOf[parts[1]] != victim || nodeOf[parts[2]] != victim
        }
        #expect(crossNode.isEmpty, "messages only the archive had, though not both ends were on the killed node: \(crossNode.prefix(10))")
        let viaArchive = archivedOnly.count
        let repeated = peers.flatMap { $0.received.filter { $0.key.hasPrefix("r") }.values }.filter { $0.stanzaIDs.count > 1 }.count
        print("cluster kill test: \(acknowledged.count) acknowledged, \(orphaned.count) clients moved from \(victim), "
            + "\(viaArchive) caught up from the archive, \(repeated) delivered again with the same stanza-id")
        try await room.verify(peers)
        stopped = true
        await cluster.stopAll()
    }

    static func id(_ round: Int, _ from: String, _ to: String) -> String { "r\(round)-\(from)-\(to)" }
    static func recipient(of id: String) -> String { String(id.split(separator: "-")[2]) }
    static func isUnsubscribedPair(_ a: String, _ b: String) -> Bool { Set([a, b]) == ["u00", "u01"] }

    /// Every connected client sends one message to every other, all clients at once.
    private func round(_ number: Int, _ peers: [ClusterPeer], pause: Duration = .zero) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for peer in peers {
                group.addTask {
                    for other in peers where other !== peer {
                        guard peer.isConnected else { return }
                        try? await peer.sendMessage(to: other.user, id: Self.id(number, peer.user, other.user))
                        if pause > .zero { try await Task.sleep(for: pause) }
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    private func waitForNode(_ cluster: ClusterProcesses, _ jid: String) async throws -> String {
        let deadline = ContinuousClock.now + .seconds(20)
        while true {
            if let node = try await cluster.node(of: jid) { return node }
            guard ContinuousClock.now < deadline else { throw ScenarioFailure("\(jid) never appeared in the directory") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    private func waitUntil(_ what: String, seconds: Int, _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while !condition() {
            guard ContinuousClock.now < deadline else { throw ScenarioFailure("timed out waiting until \(what)") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}
