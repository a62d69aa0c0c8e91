import Foundation
import ParleyClient
import ParleyCore
import Testing

/// The client's whole story in one run, written once and played against every server the
/// client must work with (parleyd, Prosody): two accounts sign in over STARTTLS, Alice asks
/// Bob to be friends with a note, Bob sees the request with the note and accepts, both end
/// with a mutual (`both`) roster entry, and they chat both ways with delivery receipts.
///
/// Every check throws (`#require`), so a caller learns of any failure and can show the
/// server's log. `configuration` gives each account's client configuration (host, port, pinned
/// certificate); `cacheDirectory` holds the clients' caches.
func loginRosterFriendRequestChatScenario(
    domain: String = "localhost", cacheDirectory: String,
    configuration: (_ username: String) throws -> ClientConfiguration
) async throws {
    let aliceJID = try JID("alice@\(domain)")
    let bobJID = try JID("bob@\(domain)")
    try FileManager.default.createDirectory(atPath: cacheDirectory, withIntermediateDirectories: true)
    let alice = try ChatClient(
        configuration: configuration("alice"), cachePath: cacheDirectory + "/alice-\(UUID().uuidString).sqlite",
        logger: quietLogger("client.alice"))
    let bob = try ChatClient(
        configuration: configuration("bob"), cachePath: cacheDirectory + "/bob-\(UUID().uuidString).sqlite",
        logger: quietLogger("client.bob"))
    let aliceEvents = EventRecorder(alice.events)
    let bobEvents = EventRecorder(bob.events)

    // Whatever happens, neither client stays behind reconnecting after the test.
    do {
        // Login over STARTTLS, with the server's certificate pinned, to a bound session.
        try await alice.connect()
        try await bob.connect()
        for (events, jid) in [(aliceEvents, aliceJID), (bobEvents, bobJID)] {
            let connected = try await events.next("\(jid) signed in") { if case .connected = $0 { true } else { false } }
            guard case .connected(let bound) = connected else { return }
            try #require(bound.bare == jid && bound.resourcepart != nil, "bound \(bound) for \(jid)")
            // The initial roster fetch of a new account: empty.
            try await events.next("\(jid)'s roster") { $0 == .rosterChanged([]) }
        }

        // The friend request, with its note, accepted: mutual friends.
        try await befriend(alice, aliceEvents, bob, bobEvents, note: "Hi Bob, it's Alice")
        // Bob's request back was answered by Alice's client by itself: she saw no request.
        try #require(!aliceEvents.all.contains { if case .contactRequest = $0 { true } else { false } }, "\(aliceEvents.all)")
        let alicesRoster = await alice.contacts()
        let bobsRoster = await bob.contacts()
        try #require(alicesRoster.map(\.jid) == [bobJID] && alicesRoster.allSatisfy { $0.isMutual && !$0.awaitingApproval }, "\(alicesRoster)")
        try #require(bobsRoster.map(\.jid) == [aliceJID] && bobsRoster.allSatisfy { $0.isMutual && !$0.awaitingApproval }, "\(bobsRoster)")

        // Chat both ways; each message is confirmed by the other client (XEP-0184).
        let hello = await alice.sendMessage(to: bobJID, body: "Hello Bob")
        let received = try await bobEvents.next("Alice's message") { if case .message(let m) = $0 { m.body == "Hello Bob" } else { false } }
        if case .message(let message) = received {
            try #require(message.from.bare == aliceJID && message.id == hello && message.receiptRequested, "\(message)")
        }
        try await aliceEvents.next("the receipt for Alice's message") {
            if case .delivered(hello, let by) = $0 { by.bare == bobJID } else { false }
        }
        let reply = await bob.sendMessage(to: aliceJID, body: "Hi Alice")
        try await aliceEvents.next("Bob's reply") {
            if case .message(let m) = $0 { m.body == "Hi Alice" && m.from.bare == bobJID && m.id == reply } else { false }
        }
        try await bobEvents.next("the receipt for Bob's reply") {
            if case .delivered(reply, let by) = $0 { by.bare == aliceJID } else { false }
        }
        let alicesHistory = try await alice.history(with: bobJID).map(\.body)
        let bobsHistory = try await bob.history(with: aliceJID).map(\.body)
        try #require(alicesHistory == ["Hello Bob", "Hi Alice"] && bobsHistory == alicesHistory, "\(alicesHistory) \(bobsHistory)")

        // Nothing went wrong on the way.
        for events in [aliceEvents, bobEvents] {
            let trouble = events.all.filter {
                switch $0 {
                case .stanzaError, .kicked, .reconnecting: true
                case .disconnected(let reason): reason != .requested
                default: false
                }
            }
            try #require(trouble.isEmpty, "\(trouble)")
        }
    } catch {
        await alice.disconnect()
        await bob.disconnect()
        throw error
    }
    await alice.disconnect()
    await bob.disconnect()
}

/// The scenario against parleyd (its twin against Prosody is in ProsodyInteropTests).
@Suite struct ParleydScenarioTests {
    @Test func loginRosterFriendRequestAndChat() async throws {
        try await withServer { server in
            try await server.createAccount("alice")
            try await server.createAccount("bob")
            let directory = server.directory
            try await loginRosterFriendRequestChatScenario(cacheDirectory: directory + "/clients") { username in
                try server.configuration(for: username)
            }
        }
    }
}
