import Foundation
import ParleyCore
@testable import ParleyServer
import Testing

/// A node that dies cannot send the unavailable presence of its sessions; the node that
/// takes it over sends it for them, as a local session's end would (RFC 6121 §4.5.2 to the
/// contacts subscribed to the user and its other resources, §4.6.3 to recipients of directed
/// presence), once to each. The dead node is played by rows written straight into the
/// database, as in `ClusterFailoverScenarios`.
@Suite struct ClusterPresenceFailoverScenarios {
    @Test func aDeadNodesSessionsGoUnavailableForSubscribersAndDirectedPresenceRecipients() async throws {
        try await TestCluster.with { cluster in
            let (a, b) = (cluster.nodes[0], cluster.nodes[1])
            let bob = try await b.im("bob", "desk")
            let alice = try await a.im("alice")
            let carol = try await b.im("carol")
            try await a.waitForSession("bob@localhost/desk", available: true)
            // Alice subscribes to Bob.
            try await alice.send("<presence to='bob@localhost' type='subscribe'/>")
            try await alice.expectPush("bob@localhost", subscription: "none", ask: true)
            _ = try await bob.expectPresence(from: "alice@localhost", type: "subscribe")
            try await bob.send("<presence to='alice@localhost' type='subscribed'/>")
            try await bob.expectPush("alice@localhost", subscription: "from")
            try await alice.expectPresence(from: "bob@localhost", type: "subscribed")
            try await alice.expectPush("bob@localhost", subscription: "to")
            try await alice.expectPresence(from: "bob@localhost/desk")

            // "ghost" joins with a session of Bob's that sent directed presence to Carol (not
            // subscribed to him); then it never beats again.
            let beating = try await cluster.ghostNodeWithBobsSession(sessionID: 78, interests: "\u{3}carol@localhost/r")
            defer { beating.cancel() }
            try await a.waitForSession("bob@localhost/ghost", available: true)
            try await b.waitForSession("bob@localhost/ghost", available: true)
            let ghost = try #require(a.running.context.sessions.session(try JID("bob@localhost/ghost")))
            #expect(ghost.withPresence { $0.directedPresence } == [try JID("carol@localhost/r")])
            beating.cancel()

            // The lease runs out; whichever node takes the ghost over speaks for its session.
            try await a.waitForSession("bob@localhost/ghost", present: false)
            for client in [alice, carol, bob] {
                let gone = try await client.expectPresence(from: "bob@localhost/ghost", type: "unavailable")
                #expect(gone.type == "unavailable")
            }
            // Once each: the other node said nothing.
            try await alice.expectNothingPending("one unavailable presence, from the node that took the ghost over")
            try await carol.expectNothingPending("one unavailable presence, from the node that took the ghost over")
            try await bob.expectNothingPending("one unavailable presence, from the node that took the ghost over")
        }
    }
}
