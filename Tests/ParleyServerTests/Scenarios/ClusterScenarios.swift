import Foundation
import ParleyCore
@testable import ParleyServer
import Testing

/// Two nodes of a cluster on one PostgreSQL database, clients on each over real sockets:
/// RFC 6121 routing, presence and subscriptions decide the same whichever node the other
/// party is on (the session directory), and stanzas cross through the nodes' inboxes.
@Suite struct ClusterScenarios {
    @Test func messagesAndPresenceCrossNodesInOrder() async throws {
        try await TestCluster.with { cluster in
            let (a, b) = (cluster.nodes[0], cluster.nodes[1])
            // A friend request across nodes, answered across nodes (RFC 6121 §3).
            let bob = try await b.im("bob")
            let alice = try await a.im("alice")
            try await a.waitForSession("bob@localhost/r", available: true)
            try await alice.send("<presence to='bob@localhost' type='subscribe'/>")
            try await alice.expectPush("bob@localhost", subscription: "none", ask: true)
            let request = try await bob.expectPresence(from: "alice@localhost", type: "subscribe")
            #expect(request.to == "bob@localhost")
            try await bob.send("<presence to='alice@localhost' type='subscribed'/>")
            try await bob.expectPush("alice@localhost", subscription: "from")
            // In the order a single node sends them (§3.1.5): the approval, the push it
            // caused, then Bob's current presence, all from Bob's node through Alice's inbox.
            try await alice.expectPresence(from: "bob@localhost", type: "subscribed")
            try await alice.expectPush("bob@localhost", subscription: "to")
            try await alice.expectPresence(from: "bob@localhost/r")
            try await alice.expectNothingPending()
            try await bob.expectNothingPending("alice's presence must not reach bob: he is only From")

            // Messages to the bare JID, many in a row: all arrive, in order.
            for index in 1...20 {
                try await alice.sendMessage(to: "bob@localhost", id: "m\(index)", body: "hello \(index)")
            }
            var ids: [String] = []
            while ids.count < 20 {
                let message = try await bob.expect("message")
                #expect(message.from == "alice@localhost/r")
                ids.append(message.id ?? "")
            }
            #expect(ids == (1...20).map { "m\($0)" })

            // And back, to the full JID.
            try await bob.sendMessage(to: "alice@localhost/r", id: "back", body: "hi")
            let back = try await alice.expect("message")
            #expect(back.id == "back")
            #expect(back.from == "bob@localhost/r")
            #expect(back.firstChild("body")?.text == "hi")

            // Bob goes unavailable: Alice, subscribed to him, is told across nodes.
            try await bob.send("<presence type='unavailable'/>")
            let gone = try await alice.expect("presence")
            #expect(gone.from == "bob@localhost/r")
            #expect(gone.type == "unavailable")
            try await a.waitForSession("bob@localhost/r", available: false)
        }
    }

    @Test func bareJIDGoesToTheHighestPriorityResourcesWhereverTheyAre() async throws {
        try await TestCluster.with { cluster in
            let (a, b) = (cluster.nodes[0], cluster.nodes[1])
            let low = try await a.im("bob", "low", priority: 1)
            let high = try await b.im("bob", "high", priority: 5)
            _ = try await low.expectPresence(from: "bob@localhost/high")
            _ = try await high.expectPresence(from: "bob@localhost/low")
            let alice = try await a.im("alice")
            try await a.waitForSession("bob@localhost/high", available: true)

            try await alice.sendMessage(to: "bob@localhost", id: "one", body: "to the highest")
            #expect(try await high.expectMessage(id: "one").firstChild("body")?.text == "to the highest")
            try await low.expectNothingPending("the lower-priority resource on Alice's node gets nothing (RFC 6121 §8.5.2.1.1)")

            // Same priority on both nodes: both get it.
            try await high.available(priority: 1)
            _ = try await low.expectPresence(from: "bob@localhost/high")
            try await a.waitForSession("bob@localhost/high", available: true)
            try await waitForPriority(a, "bob@localhost/high", 1)
            try await alice.sendMessage(to: "bob@localhost", id: "two", body: "to both")
            _ = try await high.expectMessage(id: "two")
            _ = try await low.expectMessage(id: "two")

            // A full JID on the other node with no such resource: treated as the bare JID.
            try await alice.sendMessage(to: "bob@localhost/nowhere", id: "three", body: "any")
            _ = try await high.expectMessage(id: "three")
            _ = try await low.expectMessage(id: "three")
        }
    }

    @Test func singleDeviceLoginOnAnotherNodeEndsTheFirst() async throws {
        try await TestCluster.with({ $0.sessions.singleDevice = true }) { cluster in
            let (a, b) = (cluster.nodes[0], cluster.nodes[1])
            let first = try await a.im("bob", "phone")
            try await b.waitForSession("bob@localhost/phone")
            let second = try await b.login("bob", resource: "laptop")
            let error = try await first.expectStreamError(.conflict)
            #expect(error.text == "Signed out: your account logged in on another device.")
            try await a.waitForSession("bob@localhost/phone", present: false)
            try await b.waitForSession("bob@localhost/phone", present: false)
            try await second.expectNothingPending()
        }
    }

    @Test func sameResourceOnAnotherNodeReplacesTheFirst() async throws {
        try await TestCluster.with { cluster in
            let (a, b) = (cluster.nodes[0], cluster.nodes[1])
            let first = try await a.im("bob", "desk")
            try await b.waitForSession("bob@localhost/desk")
            let second = try await b.im("bob", "desk")
            let error = try await first.expectStreamError(.conflict)
            #expect(error.text == "Replaced by a new login with the same resource.")
            // Messages now go to the new session, on the other node.
            let alice = try await a.im("alice")
            try await waitForNode(a, "bob@localhost/desk", "node-1")
            try await alice.sendMessage(to: "bob@localhost/desk", id: "x", body: "which one?")
            _ = try await second.expectMessage(id: "x")
        }
    }

    @Test func carbonsReachTheAccountsResourcesOnOtherNodes() async throws {
        try await TestCluster.with { cluster in
            let (a, b) = (cluster.nodes[0], cluster.nodes[1])
            let phone = try await a.im("alice", "phone")
            let laptop = try await b.im("alice", "laptop")
            _ = try await phone.expectPresence(from: "alice@localhost/laptop")
            _ = try await laptop.expectPresence(from: "alice@localhost/phone")
            for client in [phone, laptop] {
                let reply = try await client.query("<iq type='set' id='carbons'><enable xmlns='urn:xmpp:carbons:2'/></iq>", id: "carbons")
                #expect(reply.type == "result")
            }
            try await waitForCarbons(a, "alice@localhost/laptop")
            let bob = try await a.im("bob")
            try await phone.sendMessage(to: "bob@localhost/r", id: "c1", body: "sent from the phone")
            _ = try await bob.expectMessage(id: "c1")
            let copy = try await laptop.expect("message")
            let sent = try #require(copy.firstChild("sent", namespace: "urn:xmpp:carbons:2"))
            let forwarded = sent.firstChild("forwarded", namespace: "urn:xmpp:forward:0")?.firstChild("message")
            #expect(forwarded?.id == "c1")
            #expect(copy.to == "alice@localhost/laptop")
        }
    }

    @Test func deletingAnAccountEndsItsSessionsOnEveryNode() async throws {
        try await TestCluster.with { cluster in
            let (a, b) = (cluster.nodes[0], cluster.nodes[1])
            let onA = try await a.im("carol", "a")
            let onB = try await b.im("carol", "b")
            _ = try await onA.expectPresence(from: "carol@localhost/b")
            _ = try await onB.expectPresence(from: "carol@localhost/a")
            _ = try await cluster.storages[0].deleteAccount(username: "carol", origin: .admin)
            _ = try await onA.expectStreamError(.notAuthorized)
            _ = try await onB.expectStreamError(.notAuthorized)
            try await a.waitForSession("carol@localhost/b", present: false)
        }
    }

    @Test func aBlockOnOneNodeHoldsOnTheOthers() async throws {
        try await TestCluster.with { cluster in
            let (a, b) = (cluster.nodes[0], cluster.nodes[1])
            let alice = try await a.im("alice")
            let bob = try await b.im("bob")
            try await b.waitForSession("alice@localhost/r", available: true)
            let reply = try await alice.query(
                "<iq type='set' id='blk'><block xmlns='urn:xmpp:blocking'><item jid='bob@localhost'/></block></iq>", id: "blk")
            #expect(reply.type == "result")
            // Bob's node read Alice's list again on the block's notice.
            try await eventually("bob's node knows alice blocks him") {
                b.running.context.router.policy.verdict(
                    from: try JID("bob@localhost/r"), to: try JID("alice@localhost"),
                    stanza: XMLElement("message", namespace: XMLNamespace.client)) != .deliver
            }
            try await bob.sendMessage(to: "alice@localhost", id: "b1", body: "let me in")
            let bounced = try await bob.expect("message")
            #expect(bounced.type == "error" && bounced.id == "b1" && bounced.stanzaErrorCondition == .serviceUnavailable)
            try await alice.expectNothingPending()

            _ = try await alice.query(
                "<iq type='set' id='unb'><unblock xmlns='urn:xmpp:blocking'><item jid='bob@localhost'/></unblock></iq>", id: "unb")
            try await eventually("bob's node knows alice unblocked him") {
                b.running.context.router.policy.verdict(
                    from: try JID("bob@localhost/r"), to: try JID("alice@localhost"),
                    stanza: XMLElement("message", namespace: XMLNamespace.client)) == .deliver
            }
            try await bob.sendMessage(to: "alice@localhost", id: "b2", body: "thanks")
            _ = try await alice.expectMessage(id: "b2")
        }
    }

    // MARK: Helpers

    private func waitForPriority(_ node: TestServer, _ jid: String, _ priority: Int8) async throws {
        try await eventually("\(jid) has priority \(priority)") {
            node.running.context.sessions.session(try JID(jid))?.priority == priority
        }
    }

    private func waitForNode(_ node: TestServer, _ jid: String, _ remote: String) async throws {
        try await eventually("\(jid) is on \(remote)") { node.running.context.sessions.session(try JID(jid))?.node == remote }
    }

    private func waitForCarbons(_ node: TestServer, _ jid: String) async throws {
        try await eventually("\(jid) wants carbons") {
            node.running.context.sessions.session(try JID(jid))?.withPresence { $0.wantsCarbons } == true
        }
    }
}

/// Polls `condition` until it holds or the scenario's patience runs out.
func eventually(_ what: String, _ condition: () throws -> Bool) async throws {
    let deadline = ContinuousClock.now + TestClient.defaultTimeout
    while try !condition() {
        guard ContinuousClock.now < deadline else { throw ScenarioFailure("timed out waiting until \(what)") }
        try await Task.sleep(for: .milliseconds(10))
    }
}

/// XEP-0163 across nodes: a contact's `+notify` interests, learned by its own node from its
/// entity capabilities, travel in its directory entry, so a publisher's node notifies it.
@Suite struct ClusterPEPScenarios {
    @Test func aNickPublishedOnOneNodeReachesAContactOnAnother() async throws {
        try await TestCluster.with { cluster in
            let (a, b) = (cluster.nodes[0], cluster.nodes[1])
            try await Subscribe.establish(a, "alice", to: "bob")
            try await Subscribe.establish(a, "bob", to: "alice")
            let bob = try await b.login("bob", resource: "r")
            _ = try await bob.rosterGet()
            try await bob.availableWithCaps(b, as: "bob@localhost/r", notify: [PEP.nick])
            try await eventually("alice's node knows what bob wants") {
                a.running.context.sessions.session(try JID("bob@localhost/r"))?.withPresence { $0.notifyNodes } == [PEP.nick]
            }
            let alice = try await a.im("alice")
            _ = try await alice.expectPresence(from: "bob@localhost/r")
            let (reply, _) = try await alice.publish(PEP.nick, PEP.nick("Alice"))
            #expect(reply.type == "result")
            var event: XMLElement? = nil
            while event == nil {
                let element = try await bob.nextElement()
                if element.name == "message", let found = element.pepEvent(node: PEP.nick) { event = found }
            }
            #expect(event?.firstChild("item")?.firstChild("nick", namespace: PEP.nick)?.text == "Alice")
        }
    }
}
