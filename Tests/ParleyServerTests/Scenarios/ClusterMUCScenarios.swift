import Foundation
import Logging
import ParleyCore
import ParleyMUC
import ParleyTestSupport
@testable import ParleyServer
import Testing

/// Rooms of a cluster (XEP-0045 across nodes): one node holds a room's lease and serves it,
/// the others forward its stanzas there; occupants on any node are in the same room. When the
/// holder dies, the node that takes it over restores the room from storage with the occupants
/// whose sessions live on, and shows those of the dead node leaving (333).
@Suite struct ClusterMUCScenarios {
    static func services(_ index: Int) -> [any HostedService] {
        var settings = MUCService.Settings(domain: MUC.service, serverDomain: TestServer.domain)
        settings.archiveByDefault = false
        return [MUCService(settings: settings, logger: Logger(label: "parley.scenario.muc"))]
    }

    @Test func occupantsOnTwoNodesShareOneRoom() async throws {
        try await TestCluster.with(services: Self.services) { cluster in
            let (a, b) = (cluster.nodes[0], cluster.nodes[1])
            let alice = try await a.login("alice", resource: "r")
            try await MUC.createInstantRoom(alice, "team", nick: "alice")
            let bob = try await b.login("bob", resource: "r")
            try await a.waitForSession("bob@localhost/r")

            // Bob, on the other node, enters Alice's room: he sees her, she sees him.
            let entry = try await bob.enter("team", nick: "bob")
            #expect(entry.others.map(\.from) == ["team@\(MUC.service)/alice"])
            #expect(entry.others.first?.mucItem?[attribute: "affiliation"] == "owner")
            #expect(entry.own.statusCodes == [110])
            let joined = try await alice.expectRoomPresence("team", "bob")
            try SchemaValidator.shared.validate(joined.xmlString())
            #expect(cluster.members.map(\.roomsHeld).reduce(0, +) == 1, "one node holds the room")
            #expect(cluster.members[0].roomsHeld == 1)

            // Groupchat both ways: each message reaches both occupants once, with its id.
            try await bob.send("<message to='team@\(MUC.service)' type='groupchat' id='g1'><body>from node 1</body></message>")
            for client in [alice, bob] {
                let message = try await client.expectMessage(id: "g1")
                #expect(message.from == "team@\(MUC.service)/bob")
                #expect(message.type == "groupchat")
            }
            try await alice.send("<message to='team@\(MUC.service)' type='groupchat' id='g2'><body>from node 0</body></message>")
            for client in [alice, bob] { #expect(try await client.expectMessage(id: "g2").from == "team@\(MUC.service)/alice") }

            // A private message across nodes, from occupant JID to occupant JID.
            try await alice.send(
                "<message to='team@\(MUC.service)/bob' type='chat' id='pm'><body>psst</body><x xmlns='\(MUC.user)'/></message>")
            let pm = try await bob.expectMessage(id: "pm")
            #expect(pm.from == "team@\(MUC.service)/alice")
            #expect(pm.firstChild("body")?.text == "psst")

            // Bob changes his nickname: the unavailable (303) and available pair, to both.
            try await bob.send("<presence to='team@\(MUC.service)/robert'/>")
            let renamed = try await alice.expectRoomPresence("team", "bob", type: "unavailable", codes: [303])
            #expect(renamed.mucItem?[attribute: "nick"] == "robert")
            try await alice.expectRoomPresence("team", "robert")
            try await bob.expectRoomPresence("team", "bob", type: "unavailable", codes: [110, 303])
            try await bob.expectRoomPresence("team", "robert", codes: [110])

            // XEP-0410 self-ping from the other node: answered by the room's node.
            let ping = try await bob.query(
                "<iq type='get' id='self' to='team@\(MUC.service)/robert'><ping xmlns='urn:xmpp:ping'/></iq>", id: "self")
            #expect(ping.type == "result")

            // Alice (moderator) kicks him: he is told with 307 and 110 on his node.
            try await alice.send(
                """
                <iq type='set' id='kick' to='team@\(MUC.service)'><query xmlns='http://jabber.org/protocol/muc#admin'>\
                <item nick='robert' role='none'><reason>enough</reason></item></query></iq>
                """)
            let kicked = try await bob.expectRoomPresence("team", "robert", type: "unavailable", codes: [110, 307])
            #expect(kicked.mucItem?.firstChild("reason", namespace: MUC.user)?.text == "enough")
            try await alice.expectRoomPresence("team", "robert", type: "unavailable", codes: [307])
            #expect(try await alice.expect("iq").type == "result")

            // Out of the room, his self-ping is the error that makes a client join again.
            let after = try await bob.query(
                "<iq type='get' id='self2' to='team@\(MUC.service)/robert'><ping xmlns='urn:xmpp:ping'/></iq>", id: "self2")
            #expect(after.type == "error")
            #expect(after.firstChild("error")?.firstChild("not-acceptable") != nil, "\(after.xmlString())")
            try SchemaValidator.shared.validate(after.xmlString())
        }
    }

    @Test func sessionsEndingOnOtherNodesLeaveTheRoom() async throws {
        try await TestCluster.with(nodes: 3, services: Self.services) { cluster in
            let (a, b, c) = (cluster.nodes[0], cluster.nodes[1], cluster.nodes[2])
            let alice = try await a.login("alice", resource: "r")
            try await MUC.createInstantRoom(alice, "team", nick: "alice")
            let (bob, carol) = try await bobAndCarolEnter("team", from: b, c, seenBy: alice, cluster)

            // Bob's connection drops on node 1; the room on node 0 sees him go.
            await bob.close()
            let gone = try await alice.expectRoomPresence("team", "bob", type: "unavailable")
            #expect(gone.mucItem?[attribute: "role"] == "none")
            try await carol.expectRoomPresence("team", "bob", type: "unavailable")

            // Carol's node dies without a word from her session: the room learns it from the
            // cluster and removes her for a technical reason (333).
            cluster.members[2].halt()
            let lost = try await Self.afterTakeover(alice)
            #expect(lost.from == "team@\(MUC.service)/carol" && lost.type == "unavailable" && lost.statusCodes == [333], "\(lost.xmlString())")
            try SchemaValidator.shared.validate(lost.xmlString())
            try await waitFor("the departed occupants' rows are removed") { try await memberCount(cluster, "team") == 1 }
        }
    }

    @Test func aRoomIsTakenOverWhenItsNodeDies() async throws {
        try await TestCluster.with(nodes: 3, services: Self.services) { cluster in
            let (a, b, c) = (cluster.nodes[0], cluster.nodes[1], cluster.nodes[2])
            let alice = try await a.login("alice", resource: "r")
            try await MUC.createInstantRoom(alice, "hall", nick: "alice")
            try await MUC.configure(alice, "hall", "<field var='muc#roomconfig_persistentroom'><value>1</value></field>")
            #expect(try await alice.expect("message").statusCodes == [104])
            try await alice.send(
                "<message to='hall@\(MUC.service)' type='groupchat' id='subject'><subject>Cluster hall</subject></message>")
            _ = try await alice.expectMessage(id: "subject")
            let (bob, carol) = try await bobAndCarolEnter("hall", from: b, c, seenBy: alice, cluster)

            // Node 0, which holds the room, dies (stops beating, as a killed process).
            cluster.members[0].halt()
            // Whichever node takes it over loads the room and shows Alice removed (333).
            for client in [bob, carol] {
                let removed = try await Self.afterTakeover(client)
                #expect(
                    removed.from == "hall@\(MUC.service)/alice" && removed.type == "unavailable" && removed.statusCodes == [333],
                    "\(removed.xmlString())")
                #expect(removed.mucItem?[attribute: "role"] == "none")
                try SchemaValidator.shared.validate(removed.xmlString())
            }
            #expect(cluster.members[1].roomsHeld + cluster.members[2].roomsHeld == 1)

            // Bob and Carol go on talking without joining again.
            try await bob.send("<message to='hall@\(MUC.service)' type='groupchat' id='after'><body>still here</body></message>")
            for client in [bob, carol] { #expect(try await client.expectMessage(id: "after").from == "hall@\(MUC.service)/bob") }
            let ping = try await carol.query(
                "<iq type='get' id='self' to='hall@\(MUC.service)/carol'><ping xmlns='urn:xmpp:ping'/></iq>", id: "self")
            #expect(ping.type == "result", "the new node knows Carol: \(ping.xmlString())")

            // A newcomer gets the stored subject and the restored occupants.
            let carol2 = try await b.login("carol", resource: "phone")
            let entry = try await carol2.enter("hall", nick: "carol")
            #expect(Set(entry.others.map(\.from)) == ["hall@\(MUC.service)/bob"])
            #expect(entry.subject.firstChild("subject")?.text == "Cluster hall")
            try await waitFor("bob and carol's two sessions are recorded") { try await memberCount(cluster, "hall") == 3 }
        }
    }

    @Test func aTemporaryRoomDiesWithItsNode() async throws {
        try await TestCluster.with(services: Self.services) { cluster in
            let (a, b) = (cluster.nodes[0], cluster.nodes[1])
            let alice = try await a.login("alice", resource: "r")
            try await MUC.createInstantRoom(alice, "chat", nick: "alice")
            let bob = try await b.login("bob", resource: "r")
            _ = try await bob.enter("chat", nick: "bob")
            try await alice.expectRoomPresence("chat", "bob")
            try await waitFor("both occupants are recorded") { try await memberCount(cluster, "chat") == 2 }

            // Its node dies: the room lived in that node's memory only. Bob is told he is out
            // (110 and 333), so his client joins again, which creates the room afresh.
            cluster.members[0].halt()
            let out = try await Self.afterTakeover(bob)
            #expect(out.from == "chat@\(MUC.service)/bob" && out.type == "unavailable" && out.statusCodes == [110, 333], "\(out.xmlString())")
            try SchemaValidator.shared.validate(out.xmlString())
            try await waitFor("the lost room's rows are removed") { try await memberCount(cluster, "chat") == 0 }
            let again = try await bob.enter("chat", nick: "bob")
            #expect(again.own.statusCodes == [110, 201])
            #expect(again.others.isEmpty)
        }
    }

    /// The next stanza, given the time a lease takes to run out on a loaded machine.
    static func afterTakeover(_ client: TestClient) async throws -> XMLElement {
        try await client.nextElement(timeout: .seconds(20))
    }

    /// Bob on `b` and Carol on `c` enter `room` after Alice, each seen by those already in.
    private func bobAndCarolEnter(_ room: String, from b: TestServer, _ c: TestServer, seenBy alice: TestClient, _ cluster: TestCluster)
        async throws -> (TestClient, TestClient)
    {
        let bob = try await b.login("bob", resource: "r")
        _ = try await bob.enter(room, nick: "bob")
        try await alice.expectRoomPresence(room, "bob")
        let carol = try await c.login("carol", resource: "r")
        _ = try await carol.enter(room, nick: "carol")
        try await alice.expectRoomPresence(room, "carol")
        try await bob.expectRoomPresence(room, "carol")
        try await waitFor("every occupant is recorded") { try await memberCount(cluster, room) == 3 }
        return (bob, carol)
    }

    private func memberCount(_ cluster: TestCluster, _ room: String) async throws -> Int64 {
        try await cluster.sql("SELECT count(*) FROM cluster_room_members WHERE room = \(room)").first!.decode(Int64.self)
    }

    private func waitFor(_ what: String, _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + TestClient.defaultTimeout
        while try await !condition() {
            guard ContinuousClock.now < deadline else { throw ScenarioFailure("timed out waiting until \(what)") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
