import Foundation
import ParleyCore
@testable import ParleyServer
import Testing

/// XEP-0198 resumption when the client comes back through the load balancer to another node
/// than the one holding its session: that node hands the session over through the cluster,
/// and the client resumes it as it would have on the first node (same full JID, the `h` it
/// is told, exactly the stanzas it had not received); the first node lets go of it. If the
/// node that held the session is gone, the answer is `item-not-found`, as before.
@Suite struct ClusterResumptionScenarios {
    private static let sm = TestClient.sm

    @Test func aSessionOfOneNodeIsResumedOnAnother() async throws {
        try await TestCluster.with { cluster in
            let (a, b) = (cluster.nodes[0], cluster.nodes[1])
            let bob = try await b.login("bob", resource: "desk")
            // Alice on node 0, resumable, available, with directed presence to Bob.
            let alice = try await a.login("alice", resource: "phone")
            _ = try await alice.rosterGet()
            try await alice.available()
            let enabled = try await alice.enableStreamManagement(resume: true)
            let id = try #require(enabled[attribute: "id"])
            try await alice.send("<presence to='bob@localhost/desk'/>")
            try await bob.expectPresence(from: "alice@localhost/phone")
            try await b.waitForSession("alice@localhost/phone", available: true)
            try await bob.send("<message to='alice@localhost/phone' type='chat' id='first'><body>1</body></message>")
            #expect(try await alice.nextMessageIDs(1) == ["first"])
            // The connection drops without a word; the session waits, detached, on node 0.
            await alice.close()
            try await Task.sleep(for: .milliseconds(200))
            try await bob.send("<message to='alice@localhost/phone' type='chat' id='second'><body>2</body></message>")
            _ = try await bob.query("<iq type='get' id='sync'><ping xmlns='urn:xmpp:ping'/></iq>", id: "sync")

            // Back through the load balancer, to node 1; the client had received one stanza.
            let again = try await b.connect()
            try await again.authenticate("alice")
            try await again.send("<resume xmlns='urn:xmpp:sm:3' previd='\(id)' h='1'/>")
            let resumed = try await again.expect("resumed", namespace: Self.sm)
            #expect(resumed[attribute: "previd"] == id)
            // Node 0 had counted one stanza from the client since <enable/>: the directed presence.
            #expect(resumed[attribute: "h"] == "1")
            #expect(try await again.nextMessageIDs(1) == ["second"])

            // It is node 1's session now, under the same full JID, available as before, and
            // node 0 knows it there: Bob's messages reach it, on the new connection.
            let local = try #require(b.running.context.sessions.session(try JID("alice@localhost/phone")))
            #expect(!local.isRemote)
            #expect(local.isAvailable)
            #expect(local.withPresence { $0.directedPresence } == [try JID("bob@localhost/desk")])
            try await a.waitForSession("alice@localhost/phone", available: true)
            #expect(a.running.context.sessions.session(try JID("alice@localhost/phone"))?.node == "node-1")
            try await bob.send("<message to='alice@localhost/phone' type='chat' id='third'><body>3</body></message>")
            #expect(try await again.nextMessageIDs(1) == ["third"])
            try await again.send("<a xmlns='urn:xmpp:sm:3' h='3'/>")
            #expect(try await again.requestAcknowledgement() == 1)
            // Bob saw no unavailable presence: the session never ended.
            try await bob.expectNothingPending("the session moved; it did not end")
            try await again.expectSilence(for: .milliseconds(300))
            let rows = try await cluster.sql("SELECT node_id FROM cluster_sessions WHERE jid = 'alice@localhost/phone'")
            #expect(try rows.map { try $0.decode(String.self) } == ["node-1"])
        }
    }

    @Test func resumingOnAnotherNodeWhenTheFirstIsGoneIsItemNotFound() async throws {
        try await TestCluster.with { cluster in
            let (a, b) = (cluster.nodes[0], cluster.nodes[1])
            let alice = try await a.login("alice", resource: "phone")
            let enabled = try await alice.enableStreamManagement(resume: true)
            let id = try #require(enabled[attribute: "id"])
            await alice.close()
            try await b.waitForSession("alice@localhost/phone")
            // Node 0 stops: its sessions end with it, and leave the directory.
            await a.stop()
            try await b.waitForSession("alice@localhost/phone", present: false)
            let again = try await b.connect()
            try await again.authenticate("alice")
            try await again.send("<resume xmlns='urn:xmpp:sm:3' previd='\(id)' h='0'/>")
            let failed = try await again.expect("failed", namespace: Self.sm)
            #expect(failed.firstChild("item-not-found", namespace: XMLNamespace.stanzaErrors) != nil)
            // A fresh bind works as always.
            _ = try await again.bind(resource: "phone")
        }
    }

    @Test func anUnknownIDIsNotFoundOnAnyNode() async throws {
        try await TestCluster.with { cluster in
            let (a, b) = (cluster.nodes[0], cluster.nodes[1])
            // Alice has a session on node 0, so node 1 asks node 0, which holds no such id.
            let alice = try await a.login("alice", resource: "phone")
            _ = try await alice.enableStreamManagement(resume: true)
            try await b.waitForSession("alice@localhost/phone")
            let other = try await b.connect()
            try await other.authenticate("alice")
            try await other.send("<resume xmlns='urn:xmpp:sm:3' previd='no-such-session' h='0'/>")
            let failed = try await other.expect("failed", namespace: Self.sm)
            #expect(failed.firstChild("item-not-found", namespace: XMLNamespace.stanzaErrors) != nil)
            // The session on node 0 is untouched.
            try await alice.send("<iq type='get' id='still'><ping xmlns='urn:xmpp:ping'/></iq>")
            #expect(try await alice.expectIgnoringAckRequests("iq").id == "still")
        }
    }
}
