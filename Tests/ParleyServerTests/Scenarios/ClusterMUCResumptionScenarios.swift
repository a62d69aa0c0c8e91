import Foundation
import ParleyCore
import ParleyTestSupport
@testable import ParleyServer
import Testing

/// An occupant whose session is resumed (XEP-0198) on another node of the cluster than the one
/// that held it has not left: its session was handed over, not ended, so the room keeps it and
/// nobody sees it go.
@Suite struct ClusterMUCResumptionScenarios {
    @Test func anOccupantResumingOnAnotherNodeStaysInTheRoom() async throws {
        try await TestCluster.with(services: ClusterMUCScenarios.services) { cluster in
            let (a, b) = (cluster.nodes[0], cluster.nodes[1])
            let alice = try await a.login("alice", resource: "r")
            try await MUC.createInstantRoom(alice, "team", nick: "alice")
            let bob = try await b.login("bob", resource: "r")
            let enabled = try await bob.enableStreamManagement(resume: true)
            let id = try #require(enabled[attribute: "id"])
            _ = try await bob.enter("team", nick: "bob")
            try await alice.expectRoomPresence("team", "bob")

            // Bob's connection drops on node 1 and he comes back through the load balancer to
            // node 0, which serves the room: node 1 hands his session over.
            await bob.close()
            try await Task.sleep(for: .milliseconds(200))
            let again = try await a.connect()
            try await again.authenticate("bob")
            try await again.send("<resume xmlns='urn:xmpp:sm:3' previd='\(id)' h='0'/>")
            _ = try await again.expect("resumed", namespace: TestClient.sm)
            // Time for node 1's notice of the move to reach node 0's room.
            try await Task.sleep(for: .milliseconds(500))

            // Still an occupant: Alice's groupchat reaches him, and she saw him go nowhere.
            try await alice.send("<message to='team@\(MUC.service)' type='groupchat' id='g1'><body>still there?</body></message>")
            #expect(try await alice.expectMessage(id: "g1").from == "team@\(MUC.service)/alice")
            while true {
                let element = try await again.nextIgnoringAckRequests()
                if element.name == "message", element.id == "g1" {
                    #expect(element.from == "team@\(MUC.service)/alice")
                    break
                }
                #expect(!(element.name == "presence" && element.type == "unavailable"), "\(element.xmlString())")
            }
            try await alice.expectNothingPending("the session moved; it did not leave the room")
            let ping = try await again.query(
                "<iq type='get' id='self' to='team@\(MUC.service)/bob'><ping xmlns='urn:xmpp:ping'/></iq>", id: "self")
            #expect(ping.type == "result", "\(ping.xmlString())")
        }
    }
}
