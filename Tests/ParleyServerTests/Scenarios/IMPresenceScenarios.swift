import ParleyCore
import Testing

/// RFC 6121 §4 on the wire: initial presence and probes, broadcast only to subscribers (the
/// no-leak rule), directed presence, unavailable however a session ends, priority.
@Suite struct IMPresenceScenarios {
    /// §4.2, §4.3: initial presence brings the current presence of every available resource
    /// of the contacts the user is subscribed to, and of the user's other resources; not of
    /// a contact that is only subscribed to the user.
    @Test func initialPresenceDeliversContactsCurrentPresence() async throws {
        try await TestServer.with(accounts: TestServer.threeAccounts) { server in
            try await Subscribe.establish(server, "alice", to: "bob")
            try await Subscribe.establish(server, "carol", to: "alice")
            let bobHome = try await server.login("bob", resource: "home")
            try await bobHome.send("<presence><show>away</show><priority>3</priority></presence>")
            _ = try await bobHome.expectPresence(from: "bob@localhost/home")
            let bobWork = try await server.login("bob", resource: "work")
            try await bobWork.send("<presence><status>busy</status></presence>")
            _ = try await bobWork.nextElements(2)  // its own, and home's
            _ = try await bobHome.expectPresence(from: "bob@localhost/work")
            let carol = try await server.login("carol", resource: "r")
            try await carol.send("<presence/>")
            _ = try await carol.expectPresence(from: "carol@localhost/r")
            let aliceOther = try await server.im("alice", "other")
            let bobs = try await aliceOther.sync()
            #expect(Set(bobs.compactMap(\.from)) == ["bob@localhost/home", "bob@localhost/work"] && bobs.count == 2)
            _ = try await carol.expectPresence(from: "alice@localhost/other")

            let alice = try await server.login("alice", resource: "main")
            try await alice.send("<presence/>")
            _ = try await alice.expectPresence(from: "alice@localhost/main")
            let current = try await alice.sync()
            let home = try current.one("bob/home") { $0.isPresence(from: "bob@localhost/home") }
            #expect(home.firstChild("show")?.text == "away" && home.firstChild("priority")?.text == "3")
            #expect(try current.one("bob/work") { $0.isPresence(from: "bob@localhost/work") }.firstChild("status")?.text == "busy")
            _ = try current.one("alice/other") { $0.isPresence(from: "alice@localhost/other") }
            #expect(current.count == 3, "carol is From only: \(current.map { $0.xmlString() })")
            // And alice's initial presence went to her subscriber carol and her other resource.
            _ = try await carol.expectPresence(from: "alice@localhost/main")
            _ = try await aliceOther.expectPresence(from: "alice@localhost/main")
            try await bobHome.expectNothingPending("bob is not subscribed to alice")
        }
    }

    /// The no-leak rule: broadcast presence reaches From and Both contacts only, never a
    /// None contact, one with only a pending request, or one the user is subscribed to.
    @Test func broadcastPresenceReachesOnlySubscribers() async throws {
        try await TestServer.with(accounts: TestServer.threeAccounts) { server in
            try await Subscribe.establish(server, "bob", to: "alice")  // alice From bob
            try await Subscribe.establish(server, "alice", to: "carol")  // alice To carol
            let bob = try await server.im("bob")
            let carol = try await server.im("carol")
            let alice = try await server.im("alice")
            _ = try await alice.expectPresence(from: "carol@localhost/r")
            _ = try await bob.expectPresence(from: "alice@localhost/r")
            try await carol.expectNothingPending("carol is From toward alice, not To")
            // Carol also asks; a pending request is not a subscription.
            try await carol.send("<presence to='alice@localhost' type='subscribe'/>")
            _ = try await carol.expectPush("alice@localhost", subscription: "from", ask: true)
            _ = try await alice.expectPresence(from: "carol@localhost", type: "subscribe")
            try await alice.send("<presence><show>chat</show></presence>")
            _ = try await alice.expectPresence(from: "alice@localhost/r")
            try await alice.sync()
            #expect(try await bob.expectPresence(from: "alice@localhost/r").firstChild("show")?.text == "chat")
            try await carol.expectNothingPending()
            try await alice.send("<presence type='unavailable'/>")
            _ = try await alice.expectPresence(from: "alice@localhost/r", type: "unavailable")
            try await alice.sync()
            _ = try await bob.expectPresence(from: "alice@localhost/r", type: "unavailable")
            try await carol.expectNothingPending()
        }
    }

    /// §4.6: directed presence reaches a non-subscriber; when the session ends the server
    /// sends that recipient unavailable presence; it never spreads to others.
    @Test func directedPresenceAndItsUnavailableAtSessionEnd() async throws {
        try await TestServer.with(accounts: TestServer.threeAccounts) { server in
            let carol = try await server.im("carol")
            let bob = try await server.im("bob")
            let alice = try await server.im("alice")
            try await alice.send("<presence to='carol@localhost/r'><status>hi carol</status></presence>")
            try await alice.sync()
            let directed = try await carol.expectPresence(from: "alice@localhost/r")
            #expect(directed.firstChild("status")?.text == "hi carol")
            try await bob.expectNothingPending()
            try await alice.send("</stream:stream>")
            try await alice.expectStreamEnd()
            _ = try await carol.expectPresence(from: "alice@localhost/r", type: "unavailable")
            try await bob.expectNothingPending()
        }
    }

    @Test func directedUnavailableEndsTheDirectedPresence() async throws {
        try await TestServer.with(accounts: TestServer.threeAccounts) { server in
            let carol = try await server.im("carol")
            let alice = try await server.im("alice")
            try await alice.send("<presence to='carol@localhost'/>")
            _ = try await carol.expectPresence(from: "alice@localhost/r")
            try await alice.send("<presence to='carol@localhost' type='unavailable'/>")
            _ = try await carol.expectPresence(from: "alice@localhost/r", type: "unavailable")
            try await server.disconnect("alice", alice)
            try await carol.expectNothingPending("directed presence was already withdrawn")
        }
    }

    /// §4.5.2: a session that drops without unavailable presence (the socket just closes)
    /// is announced unavailable to the subscribers and the account's other resources.
    @Test func aDroppedConnectionIsBroadcastAsUnavailable() async throws {
        try await TestServer.with(accounts: TestServer.threeAccounts) { server in
            try await Subscribe.establish(server, "bob", to: "alice")
            try await Subscribe.establish(server, "carol", to: "alice")
            let bob = try await server.im("bob")
            let carol = try await server.im("carol")
            let other = try await server.im("alice", "other")
            _ = try await bob.expectPresence(from: "alice@localhost/other")
            _ = try await carol.expectPresence(from: "alice@localhost/other")
            let alice = try await server.im("alice", "phone")
            _ = try await alice.expectPresence(from: "alice@localhost/other")
            _ = try await bob.expectPresence(from: "alice@localhost/phone")
            _ = try await carol.expectPresence(from: "alice@localhost/phone")
            _ = try await other.expectPresence(from: "alice@localhost/phone")
            await alice.close()
            for client in [bob, carol, other] {
                let unavailable = try await client.expectPresence(from: "alice@localhost/phone", type: "unavailable")
                #expect(unavailable.elements.isEmpty)
            }
            for client in [bob, carol, other] { try await client.expectNothingPending() }
        }
    }

    /// Priority travels with presence, and a probe answer carries the latest one.
    @Test func priorityChangesAreBroadcastAndProbedAnswersAreCurrent() async throws {
        try await TestServer.with { server in
            try await Subscribe.establish(server, "bob", to: "alice")
            let alice = try await server.im("alice", priority: 5)
            try await alice.available(priority: -2, status: "lurking")
            let bob = try await server.im("bob")
            let probed = try await bob.expectPresence(from: "alice@localhost/r")
            #expect(probed.firstChild("priority")?.text == "-2" && probed.firstChild("status")?.text == "lurking")
            try await alice.available(priority: 1)
            try await alice.sync()
            #expect(try await bob.expectPresence(from: "alice@localhost/r").firstChild("priority")?.text == "1")
        }
    }

    /// Presence of an unknown type is refused; a client's probe is not passed on.
    @Test func probesFromClientsAreIgnoredAndUnknownTypesRefused() async throws {
        try await TestServer.with { server in
            let bob = try await server.im("bob")
            let alice = try await server.im("alice")
            try await alice.send("<presence to='bob@localhost' type='probe'/>")
            try await alice.send("<presence to='bob@localhost' type='invisible' id='p1'/>")
            let error = try await alice.expect("presence")
            #expect(error.type == "error" && error.id == "p1" && error.stanzaErrorCondition == .badRequest)
            try await alice.expectNothingPending()
            try await bob.expectNothingPending("no presence from a non-subscriber, not even through a probe")
        }
    }
}
