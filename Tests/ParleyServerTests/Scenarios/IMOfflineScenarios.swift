import Foundation
import ParleyCore
import Testing

/// XEP-0160 offline storage on the wire: stamped with XEP-0203 delay, delivered in order at
/// the next available presence with non-negative priority, once; quota; what is not kept;
/// and order across a server restart.
@Suite struct IMOfflineScenarios {
    private static func sendNumbered(_ sender: TestClient, _ count: Int, prefix: String = "m") async throws {
        for index in 1...count {
            let type = index % 2 == 0 ? "normal" : "chat"
            try await sender.sendMessage(to: "alice@localhost", id: "\(prefix)\(index)", type: type, body: "message \(index)")
        }
        try await sender.expectNothingPending("stored without complaint")
    }

    /// Expects the numbered messages, in order, each with its delay from the server.
    private static func expectNumbered(_ client: TestClient, _ count: Int, prefix: String = "m") async throws {
        for index in 1...count {
            let message = try await client.expectMessage(id: "\(prefix)\(index)")
            #expect(message.from == "bob@localhost/r" && message.to?.hasPrefix("alice@localhost") == true)
            #expect(message.firstChild("body")?.text == "message \(index)")
            let delay = try #require(message.firstChild("delay", namespace: IM.delay), "\(message.xmlString())")
            #expect(delay[attribute: "from"] == "localhost")
            let stamp = try #require(delay[attribute: "stamp"])
            #expect(stamp.hasSuffix("Z"))
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let date = try #require(formatter.date(from: stamp), "stamp \(stamp)")
            #expect(abs(date.timeIntervalSinceNow) < 120)
        }
    }

    @Test func storedMessagesAreDeliveredInOrderWithDelayOnceAtTheNextAvailablePresence() async throws {
        try await TestServer.with { server in
            let bob = try await server.login("bob", resource: "r")
            try await Self.sendNumbered(bob, 6)
            // Bound and interested but not available: nothing yet.
            let alice = try await server.im("alice", available: false)
            try await alice.expectNothingPending()
            try await alice.available()
            try await Self.expectNumbered(alice, 6)
            try await alice.expectNothingPending()
            try await server.disconnect("alice", alice)
            try await server.im("alice", "again").expectNothingPending("delivered once")
        }
    }

    /// A negative-priority initial presence does not take the messages; the next session
    /// with a non-negative priority does.
    @Test func aNegativePriorityLoginDoesNotTakeOfflineMessages() async throws {
        try await TestServer.with { server in
            let bob = try await server.login("bob", resource: "r")
            try await Self.sendNumbered(bob, 2)
            let shy = try await server.im("alice", "shy", priority: -5)
            try await shy.expectNothingPending()
            let alice = try await server.im("alice", "main", priority: 0)
            try await alice.expectPresence(from: "alice@localhost/shy")
            try await Self.expectNumbered(alice, 2)
            try await shy.expectPresence(from: "alice@localhost/main")
            try await shy.expectNothingPending()
        }
    }

    /// XEP-0160: messages are delivered "when the recipient next becomes available" with a
    /// non-negative priority, which a session raising its priority from negative is.
    @Test func raisingThePriorityToNonNegativeDeliversOfflineMessages() async throws {
        try await TestServer.with { server in
            let bob = try await server.login("bob", resource: "r")
            try await Self.sendNumbered(bob, 2)
            let alice = try await server.im("alice", priority: -1)
            try await alice.expectNothingPending()
            try await alice.available(priority: 1)
            try await Self.expectNumbered(alice, 2)
        }
    }

    /// A message stored a moment before the recipient becomes available is delivered at
    /// that presence, not left in storage while the recipient is online.
    @Test func aMessageStoredJustBeforeAvailablePresenceIsDeliveredAtIt() async throws {
        try await TestServer.with { server in
            let bob = try await server.login("bob", resource: "r")
            let alice = try await server.im("alice", available: false)
            for round in 1...10 {
                try await bob.sendMessage(to: "alice@localhost", id: "race\(round)")
                try await bob.expectNothingPending()
                try await alice.available()
                let message = try await alice.expectMessage(id: "race\(round)")
                #expect(message.firstChild("delay", namespace: IM.delay) != nil)
                try await alice.send("<presence type='unavailable'/>")
                _ = try await alice.expectPresence(from: "alice@localhost/r", type: "unavailable")
            }
        }
    }

    @Test func overTheQuotaTheSenderGetsResourceConstraint() async throws {
        try await TestServer.with({ $0.offline.quota = 2 }) { server in
            let bob = try await server.login("bob", resource: "r")
            try await Self.sendNumbered(bob, 2)
            try await bob.sendMessage(to: "alice@localhost", id: "m3")
            let error = try await bob.expect("message")
            #expect(error.type == "error" && error.id == "m3" && error.stanzaErrorCondition == .resourceConstraint)
            let alice = try await server.im("alice")
            try await Self.expectNumbered(alice, 2)
            try await alice.expectNothingPending()
        }
    }

    /// Chat states and other messages without content are not stored (XEP-0160 §3,
    /// XEP-0334), nor headlines; a no-store hint is honoured.
    @Test func contentFreeMessagesAreNotStored() async throws {
        try await TestServer.with { server in
            let bob = try await server.login("bob", resource: "r")
            try await bob.send("<message to='alice@localhost' type='chat' id='cs'><composing xmlns='http://jabber.org/protocol/chatstates'/></message>")
            try await bob.send("<message to='alice@localhost' type='headline' id='hl'><body>news</body></message>")
            try await bob.send("<message to='alice@localhost' type='chat' id='ns'><body>ephemeral</body><no-store xmlns='urn:xmpp:hints'/></message>")
            try await bob.send("<message to='alice@localhost' type='chat' id='kept'><body>kept</body><active xmlns='http://jabber.org/protocol/chatstates'/></message>")
            try await bob.expectNothingPending()
            let alice = try await server.im("alice")
            let kept = try await alice.expectMessage(id: "kept")
            #expect(kept.firstChild("active", namespace: "http://jabber.org/protocol/chatstates") != nil)
            try await alice.expectNothingPending()
        }
    }

    /// Stored messages survive a restart of the server, and come in the order sent.
    @Test func offlineMessagesKeepTheirOrderAcrossARestart() async throws {
        try await TestServer.with { server in
            let bob = try await server.login("bob", resource: "r")
            try await Self.sendNumbered(bob, 20)
            try await server.disconnect("bob", bob)  // so shutdown need not wait for it
            try await server.restart()
            let alice = try await server.im("alice")
            try await Self.expectNumbered(alice, 20)
            try await alice.expectNothingPending()
            // And the new server stores more, after them.
            let bobAgain = try await server.login("bob", resource: "r")
            try await server.disconnect("alice", alice)
            try await Self.sendNumbered(bobAgain, 2, prefix: "n")
            try await server.disconnect("bob", bobAgain)
            try await server.restart()
            try await Self.expectNumbered(try await server.im("alice"), 2, prefix: "n")
        }
    }
}
