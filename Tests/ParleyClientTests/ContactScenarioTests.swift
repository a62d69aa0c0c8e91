import Foundation
import ParleyClient
import ParleyCore
import Testing

/// Sign-in and friend requests between two real clients through a real parleyd.
@Suite(.serialized) struct ContactScenarioTests {
    @Test func signsInAndReportsTheBoundJID() async throws {
        try await withServer { server in
            try await server.createAccount("alice")
            let (alice, events) = try server.client("alice", resource: "laptop")
            try await alice.connect()
            let connected = try await events.next { if case .connected = $0 { true } else { false } }
            let expected = try JID("alice@localhost/laptop")
                #expect(connected == .connected(jid: expected))
            await alice.disconnect()
        }
    }

    @Test func aWrongPasswordFailsWithoutRetrying() async throws {
        try await withServer { server in
            try await server.createAccount("alice")
            let client = try ChatClient(configuration: server.configuration(for: "alice", password: "wrong password"), logger: quietLogger("c"))
            await #expect(throws: ClientError.self) { try await client.connect() }
            let events = EventRecorder(client.events)
            try await events.next { if case .disconnected(.authenticationFailed) = $0 { true } else { false } }
            try await Task.sleep(for: .milliseconds(500))
            #expect(!events.all.contains { if case .reconnecting = $0 { true } else { false } })
        }
    }

    @Test func anAcceptedRequestMakesMutualFriends() async throws {
        try await withServer { server in
            let ((alice, aliceEvents), (bob, bobEvents)) = try await server.signedInPair("alice", "bob")
            try await befriend(alice, aliceEvents, bob, bobEvents, note: "It's Alice from the conference")

            // Alice asked back automatically: she never saw Bob's return request as a new one.
            #expect(!aliceEvents.all.contains { if case .contactRequest = $0 { true } else { false } })
            let aliceRoster = await alice.contacts()
            let bobJID = try JID("bob@localhost")
                #expect(aliceRoster.map(\.jid) == [bobJID])
            #expect(aliceRoster.first?.isMutual == true)
            // The roster and its version are in the cache for the next login.
            let cached = try await alice.cache!.roster()
            #expect(cached.contacts.first?.subscription == .both && cached.version != nil)
            await alice.disconnect()
            await bob.disconnect()
        }
    }

    @Test func aDeclinedRequestIsReported() async throws {
        try await withServer { server in
            let ((alice, aliceEvents), (carol, carolEvents)) = try await server.signedInPair("alice", "carol")
            let carolJID = try JID("carol@localhost")
            try await alice.addContact(carolJID, message: "hi")
            try await carolEvents.next("request") { $0 == .contactRequest(from: try! JID("alice@localhost"), message: "hi") }
            await carol.decline(try JID("alice@localhost"))
            try await aliceEvents.next("decline") { $0 == .contactDeclined(carolJID) }
            try await eventually("alice's item shows no pending request") {
                let contact = await alice.contacts().first { $0.jid == carolJID }
                return contact?.subscription == Contact.Subscription.none && contact?.awaitingApproval == false
            }
            await alice.disconnect()
            await carol.disconnect()
        }
    }

    @Test func removalByTheOtherSideIsReportedOnce() async throws {
        try await withServer { server in
            let ((alice, aliceEvents), (bob, bobEvents)) = try await server.signedInPair("alice", "bob")
            try await befriend(alice, aliceEvents, bob, bobEvents, note: nil)
            let aliceJID = try JID("alice@localhost")
            try await bob.removeContact(aliceJID)
            try await aliceEvents.next("removal") { $0 == .contactRemoved(try! JID("bob@localhost")) }
            try await eventually("bob's roster no longer has alice") { await bob.contacts().isEmpty }
            try await Task.sleep(for: .milliseconds(300))
            #expect(aliceEvents.all.filter { if case .contactRemoved = $0 { true } else { false } }.count == 1)
            await alice.disconnect()
            await bob.disconnect()
        }
    }
}

extension ContactScenarioTests {
    /// XEP-0237: a second login with the cached roster version gets only what changed while
    /// away, as pushes, and ends with the same roster as a full fetch would give.
    @Test func aCachedRosterVersionBringsOnlyTheChanges() async throws {
        try await withServer { server in
            try await server.createAccount("alice")
            try await server.createAccount("bob")
            try await server.createAccount("carol")
            let cachePath = server.directory + "/alice-cache.sqlite"
            let (alice, aliceEvents) = try server.client("alice", cachePath: cachePath)
            let (bob, bobEvents) = try server.client("bob")
            try await alice.connect()
            try await bob.connect()
            try await befriend(alice, aliceEvents, bob, bobEvents, note: nil)
            try await alice.addContact(try JID("carol@localhost"))
            let versionBefore = try await alice.cache!.roster().version
            await alice.disconnect()

            // While Alice is away, Bob removes her.
            try await bob.removeContact(try JID("alice@localhost"))
            await bob.disconnect()

            let (again, againEvents) = try server.client("alice", cachePath: cachePath)
            try await again.connect()
            // The server offers versioning, so the fetch carried the cached version.
            #expect(await again.xmpp.streamFeatures?.firstChild("ver", namespace: "urn:xmpp:features:rosterver") != nil)
            try await againEvents.next("the roster") { if case .rosterChanged = $0 { true } else { false } }
            let bobJID = try JID("bob@localhost")
            try await eventually("the removal arrives as a push") {
                await again.contacts().first { $0.jid == bobJID }?.subscription == Contact.Subscription.none
            }
            #expect(await again.contacts().map(\.jid.description) == ["bob@localhost", "carol@localhost"])
            let versionAfter = try await again.cache!.roster().version
            #expect(versionAfter != nil && versionAfter != versionBefore)
            await again.disconnect()
        }
    }
}

/// Alice asks Bob (with `note`), Bob accepts, and both end up with a `both` subscription.
func befriend(_ alice: ChatClient, _ aliceEvents: EventRecorder, _ bob: ChatClient, _ bobEvents: EventRecorder, note: String?) async throws {
    let aliceJID = try JID("alice@localhost")
    let bobJID = try JID("bob@localhost")
    try await alice.addContact(bobJID, message: note)
    try await bobEvents.next("friend request") { $0 == .contactRequest(from: aliceJID, message: note) }
    await bob.accept(aliceJID)
    try await aliceEvents.next("acceptance") { $0 == .contactAccepted(bobJID) }
    try await bobEvents.next("acceptance of the request back") { $0 == .contactAccepted(aliceJID) }
    try await eventually("both rosters show 'both'") {
        let alicesView = await alice.contacts().first { $0.jid == bobJID }?.subscription
        let bobsView = await bob.contacts().first { $0.jid == aliceJID }?.subscription
        return alicesView == .both && bobsView == .both
    }
}
