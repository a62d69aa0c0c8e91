import Foundation
import ParleyClient
import ParleyCore
import ParleyServer
import Testing

/// Chat, receipts, the cache, and staying connected across a server restart.
@Suite(.serialized) struct MessagingScenarioTests {
    let aliceJID = try! JID("alice@localhost")
    let bobJID = try! JID("bob@localhost")

    @Test func chatBothWaysWithReceiptsAndTheConversationCache() async throws {
        try await withServer { server in
            let ((alice, aliceEvents), (bob, bobEvents)) = try await server.signedInPair("alice", "bob")
            try await befriend(alice, aliceEvents, bob, bobEvents, note: nil)

            let first = await alice.sendMessage(to: bobJID, body: "Hello Bob")
            let second = await alice.sendMessage(to: bobJID, body: "Are you there?")
            for (id, body) in [(first, "Hello Bob"), (second, "Are you there?")] {
                let event = try await bobEvents.next("message") { if case .message = $0 { true } else { false } }
                guard case .message(let message) = event else { return }
                #expect(message.body == body && message.id == id && message.from.bare == aliceJID && message.receiptRequested)
                try await aliceEvents.next("receipt for \(id)") {
                    if case .delivered(id, let by) = $0 { by.bare == bobJID } else { false }
                }
            }
            let reply = await bob.sendMessage(to: aliceJID, body: "Yes, hi Alice")
            try await aliceEvents.next("reply") { if case .message(let m) = $0 { m.body == "Yes, hi Alice" } else { false } }
            try await bobEvents.next("receipt for the reply") { if case .delivered(reply, _) = $0 { true } else { false } }

            // Bob's cache: one conversation, two unread, the reply last; history in order.
            let conversations = try await bob.conversations()
            #expect(conversations.count == 1)
            #expect(conversations.first?.peer == aliceJID && conversations.first?.unreadCount == 2)
            #expect(conversations.first?.lastMessage?.body == "Yes, hi Alice")
            #expect(conversations.first?.lastMessage?.direction == .outgoing)
            let history = try await bob.history(with: aliceJID)
            #expect(history.map(\.body) == ["Hello Bob", "Are you there?", "Yes, hi Alice"])
            #expect(history.map(\.direction) == [.incoming, .incoming, .outgoing])
            try await bob.markRead(aliceJID)
            #expect(try await bob.conversations().first?.unreadCount == 0)

            // Alice's cache: her messages are marked delivered, Bob's reply is unread.
            let aliceHistory = try await alice.history(with: bobJID)
            #expect(aliceHistory.filter { $0.direction == .outgoing }.allSatisfy { $0.delivered })
            #expect(try await alice.conversations().first?.unreadCount == 1)
            await alice.disconnect()
            await bob.disconnect()
        }
    }

    @Test func aStrangerGetsNoReceiptButTheMessageArrives() async throws {
        try await withServer { server in
            let ((alice, aliceEvents), (bob, bobEvents)) = try await server.signedInPair("alice", "bob")
            let id = await alice.sendMessage(to: bobJID, body: "hi stranger")
            try await bobEvents.next("message") { if case .message(let m) = $0 { m.id == id } else { false } }
            try await Task.sleep(for: .milliseconds(300))
            #expect(!aliceEvents.all.contains { if case .delivered = $0 { true } else { false } })
            await alice.disconnect()
            await bob.disconnect()
        }
    }

    @Test func aMessageToNoSuchAccountComesBackAsAStanzaError() async throws {
        try await withServer { server in
            try await server.createAccount("alice")
            let (alice, aliceEvents) = try server.client("alice")
            try await alice.connect()
            let nobody = try JID("nobody@localhost")
            let id = await alice.sendMessage(to: nobody, body: "hello?")
            let event = try await aliceEvents.next("the bounce") { if case .stanzaError(id, _, _) = $0 { true } else { false } }
            if case .stanzaError(_, let from, let error) = event {
                #expect(from == nobody && error.condition == .serviceUnavailable)
            }
            await alice.disconnect()
        }
    }

    @Test func reconnectsAfterAServerRestartAndDeliversWhatWasQueued() async throws {
        try await withServer(fixedPort: true) { server in
            let ((alice, aliceEvents), (bob, bobEvents)) = try await server.signedInPair("alice", "bob")
            try await befriend(alice, aliceEvents, bob, bobEvents, note: nil)

            let port = server.running.c2sPort
            await server.running.shutdown()
            try await aliceEvents.next("reconnecting") { if case .reconnecting = $0 { true } else { false } }
            // Sent while the server is down: it waits in the outbox.
            let id = await alice.sendMessage(to: bobJID, body: "sent while you were away")
            server.running = try await TestServer.start(directory: server.directory, port: port).running

            try await aliceEvents.next("connected again", where: { if case .connected = $0 { true } else { false } })
            try await bobEvents.next("connected again", where: { if case .connected = $0 { true } else { false } })
            try await bobEvents.next(within: .seconds(15), "the queued message") {
                if case .message(let m) = $0 { m.id == id && m.body == "sent while you were away" } else { false }
            }
            try await aliceEvents.next("its receipt") { if case .delivered(id, _) = $0 { true } else { false } }
            await alice.disconnect()
            await bob.disconnect()
        }
    }

    @Test func aLoginElsewhereKicksTheFirstClientForGood() async throws {
        try await withServer(singleDevice: true) { server in
            try await server.createAccount("alice")
            let (first, firstEvents) = try server.client("alice", resource: "phone")
            let (second, secondEvents) = try server.client("alice", resource: "laptop")
            try await first.connect()
            try await second.connect()
            try await secondEvents.next { if case .connected = $0 { true } else { false } }
            try await firstEvents.next("kick") { $0 == .kicked(.loggedInElsewhere) }
            try await Task.sleep(for: .seconds(3))
            let afterKick = firstEvents.all.drop { $0 != .kicked(.loggedInElsewhere) }
            #expect(!afterKick.contains { if case .reconnecting = $0 { true } else if case .connected = $0 { true } else { false } })
            #expect(await second.xmpp.boundJID != nil)
            await second.disconnect()
        }
    }

    @Test func registersInBandAndChangesThePassword() async throws {
        try await withServer { server in
            let configuration = try server.configuration(for: "dave", password: "first password")
            try await XMPPClient.registerAccount(configuration: configuration)
            await #expect(throws: ClientError.self) { try await XMPPClient.registerAccount(configuration: configuration) }

            let dave = try ChatClient(configuration: configuration, logger: quietLogger("dave"))
            try await dave.connect()
            try await dave.changePassword(to: "second password")
            await dave.disconnect()

            let again = try ChatClient(configuration: server.configuration(for: "dave", password: "second password"), logger: quietLogger("dave"))
            try await again.connect()
            await again.disconnect()
        }
    }
}
