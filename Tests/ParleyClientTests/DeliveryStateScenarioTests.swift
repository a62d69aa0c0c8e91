import Foundation
import ParleyClient
import ParleyCore
import Testing

/// What a sender sees of its message (sent, delivered, read), retraction, and a second
/// device catching up from the archive.
@Suite(.serialized) struct DeliveryStateScenarioTests {
    let aliceJID = try! JID("alice@localhost")
    let bobJID = try! JID("bob@localhost")

    @Test func aMessageGoesFromSentToDeliveredToReadAndCanBeRecalled() async throws {
        try await withServer { server in
            let ((alice, aliceEvents), (bob, bobEvents)) = try await server.signedInPair("alice", "bob")
            try await befriend(alice, aliceEvents, bob, bobEvents, note: nil)

            let first = await alice.sendMessage(to: bobJID, body: "one")
            let second = await alice.sendMessage(to: bobJID, body: "two")
            // The server's acknowledgement and Bob's receipt may come in either order; each
            // message is reported sent exactly once.
            try await eventually("both sent and delivered") {
                let all = aliceEvents.all
                return [first, second].allSatisfy { id in
                    all.contains(.sent(messageID: id)) && all.contains { if case .delivered(id, _) = $0 { true } else { false } }
                }
            }
            try await alice.settle()
            for id in [first, second] {
                #expect(aliceEvents.all.filter { $0 == .sent(messageID: id) }.count == 1)
            }
            try await bobEvents.next("the second message") { if case .message(let m) = $0 { m.id == second } else { false } }
            #expect(try await alice.history(with: bobJID).map(\.state) == [.delivered, .delivered])

            // Bob opens the conversation: a displayed marker for the last message marks both read.
            try await bob.markRead(aliceJID)
            try await aliceEvents.next("read marker") { if case .displayed(second, let by) = $0 { by.bare == bobJID } else { false } }
            #expect(try await alice.history(with: bobJID).map(\.state) == [.read, .read])

            // Alice takes the first one back: Bob's client marks it, his cache forgets the text.
            await alice.retract(messageID: first, sentTo: bobJID)
            try await aliceEvents.next("own retraction") { $0 == .retracted(messageID: first, peer: bobJID, bySelf: true) }
            try await bobEvents.next("retraction") { $0 == .retracted(messageID: first, peer: aliceJID, bySelf: false) }
            let bobsView = try await bob.history(with: aliceJID)
            #expect(bobsView.map(\.retracted) == [true, false])
            #expect(bobsView.map(\.body) == ["", "two"])
            // The retraction's fallback text is not shown as a message.
            #expect(!bobEvents.all.contains { if case .message(let m) = $0 { m.body.contains("retract") } else { false } })

            // A catch-up from the archive (its tombstone) keeps it retracted.
            try await bob.synchronize()
            #expect(try await bob.history(with: aliceJID).map(\.retracted) == [true, false])
            await alice.disconnect()
            await bob.disconnect()
        }
    }

    @Test func aSecondDeviceCatchesUpFromTheArchiveInTheServersOrder() async throws {
        try await withServer { server in
            try await server.createAccount("alice")
            try await server.createAccount("bob")
            let (alice, aliceEvents) = try server.client("alice")
            let (phone, phoneEvents) = try server.client("bob", resource: "phone")
            let laptopCache = server.directory + "/clients/bob-laptop.sqlite"
            let (laptop, _) = try server.client("bob", resource: "laptop", cachePath: laptopCache)
            try await alice.connect()
            try await phone.connect()
            try await laptop.connect()
            try await befriend(alice, aliceEvents, phone, phoneEvents, note: nil)
            let early = await alice.sendMessage(to: bobJID, body: "before the laptop slept")
            try await phoneEvents.next("early message") { if case .message(let m) = $0 { m.id == early } else { false } }
            try await laptop.settle()
            await laptop.disconnect()

            // While the laptop is away, the phone talks with Alice: nothing waits offline for
            // the laptop, so only the archive can tell it.
            let question = await alice.sendMessage(to: bobJID, body: "lunch?")
            try await phoneEvents.next("question") { if case .message(let m) = $0 { m.id == question } else { false } }
            await phone.sendMessage(to: aliceJID, body: "yes, at one")
            try await aliceEvents.next("answer") { if case .message(let m) = $0 { m.body == "yes, at one" } else { false } }
            await alice.sendMessage(to: bobJID, body: "see you")
            try await phoneEvents.next("see you") { if case .message(let m) = $0 { m.body == "see you" } else { false } }

            let (laptopAgain, laptopEvents) = try server.client("bob", resource: "laptop", cachePath: laptopCache)
            try await laptopAgain.connect()
            try await laptopEvents.next("the missed question") { if case .message(let m) = $0 { m.body == "lunch?" } else { false } }
            try await laptopAgain.synchronize()
            let laptopView = try await laptopAgain.history(with: aliceJID)
            #expect(laptopView.map(\.body) == ["before the laptop slept", "lunch?", "yes, at one", "see you"])
            #expect(laptopView.map(\.direction) == [.incoming, .incoming, .outgoing, .incoming])
            #expect(laptopView.allSatisfy { $0.confirmedByArchive })
            // Only what it had not seen is news; the early message is not shown again.
            #expect(!laptopEvents.all.contains { if case .message(let m) = $0 { m.id == early } else { false } })
            try await phone.synchronize()
            #expect(try await phone.history(with: aliceJID).map(\.body) == laptopView.map(\.body))
            await alice.disconnect()
            await phone.disconnect()
            await laptopAgain.disconnect()
        }
    }

    @Test func carbonsShowWhatAnotherOnlineDeviceSendsAndReceives() async throws {
        try await withServer { server in
            try await server.createAccount("alice")
            try await server.createAccount("bob")
            let (alice, aliceEvents) = try server.client("alice")
            let (phone, phoneEvents) = try server.client("bob", resource: "phone")
            let (laptop, laptopEvents) = try server.client("bob", resource: "laptop")
            try await alice.connect()
            try await phone.connect()
            try await laptop.connect()
            try await befriend(alice, aliceEvents, phone, phoneEvents, note: nil)
            try await phone.settle()
            try await laptop.settle()

            // To Alice's full JID of the phone only: the laptop learns of it by a carbon.
            let phoneJID = try #require(await phone.xmpp.boundJID)
            var direct = XMLElement("message", namespace: XMLNamespace.client, ["to": phoneJID.description, "type": "chat", "id": "direct-1"])
            direct.append(XMLElement("body", text: "just for your phone"))
            direct.append(XMLElement("request", namespace: XMLNamespace.receipts))
            await alice.xmpp.send(direct)
            try await phoneEvents.next("direct message") { if case .message(let m) = $0 { m.id == "direct-1" } else { false } }
            try await laptopEvents.next("its carbon") { if case .message(let m) = $0 { m.id == "direct-1" && m.from.bare == aliceJID } else { false } }
            // Only the phone, which the message was for, returned a receipt.
            try await aliceEvents.next("the phone's receipt") { if case .delivered("direct-1", let by) = $0 { by == phoneJID } else { false } }

            let reply = await phone.sendMessage(to: aliceJID, body: "sent from the phone")
            try await aliceEvents.next("the reply") { if case .message(let m) = $0 { m.id == reply } else { false } }
            try await laptopEvents.next("the phone's message, copied") {
                if case .message(let m) = $0 { m.id == reply && m.from.bare == bobJID && m.to?.bare == aliceJID } else { false }
            }
            try await laptop.settle()
            let laptopView = try await laptop.history(with: aliceJID)
            #expect(laptopView.map(\.body) == ["just for your phone", "sent from the phone"])
            #expect(laptopView.map(\.direction) == [.incoming, .outgoing])
            try await alice.settle()
            #expect(aliceEvents.all.filter { if case .delivered("direct-1", _) = $0 { true } else { false } }.count == 1)
            await alice.disconnect()
            await phone.disconnect()
            await laptop.disconnect()
        }
    }
}

/// A program that ends before the server acknowledged what it wrote.
@Suite(.serialized) struct UnsentAtExitTests {
    @Test func whatAnEarlierRunLeftUnacknowledgedIsSentByTheNextOnce() async throws {
        try await withServer { server in
            try await server.createAccount("alice")
            try await server.createAccount("bob")
            let bobJID = try JID("bob@localhost")
            let cache = server.directory + "/clients/alice-laptop.sqlite"
            // The first run writes while offline and ends without ever connecting.
            do {
                let (firstRun, _) = try server.client("alice", cachePath: cache)
                await firstRun.sendMessage(to: bobJID, body: "written on the train")
                await firstRun.sendMessage(to: bobJID, body: "and another")
                #expect(try await firstRun.history(with: bobJID).map(\.state) == [.pending, .pending])
            }
            let (bob, bobEvents) = try server.client("bob")
            try await bob.connect()
            let (secondRun, secondEvents) = try server.client("alice", cachePath: cache)
            try await secondRun.connect()
            try await bobEvents.next("the first") { if case .message(let m) = $0 { m.body == "written on the train" } else { false } }
            try await bobEvents.next("the second") { if case .message(let m) = $0 { m.body == "and another" } else { false } }
            // `settle()` returns once the server acknowledged them: nothing is left to resend.
            try await secondRun.settle()
            #expect(try await secondRun.history(with: bobJID).allSatisfy { $0.state >= .sent })
            #expect(secondEvents.all.filter { if case .sent = $0 { true } else { false } }.count == 2)

            // A third run has nothing left to send: Bob sees each message once.
            await secondRun.disconnect()
            let (thirdRun, _) = try server.client("alice", cachePath: cache)
            try await thirdRun.connect()
            try await thirdRun.settle()
            try await bob.settle()
            #expect(bobEvents.all.filter { if case .message = $0 { true } else { false } }.count == 2)
            #expect(try await bob.history(with: try JID("alice@localhost")).map(\.body) == ["written on the train", "and another"])
            await thirdRun.disconnect()
            await bob.disconnect()
        }
    }
}
