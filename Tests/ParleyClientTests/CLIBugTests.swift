import Foundation
import ParleyClient
import ParleyCore
import Testing

/// Bugs the CLI had, each shown by what a user would see.
@Suite(.serialized, .enabled(if: CLI.executable != nil, "the parley executable is built next to the tests"))
struct CLIBugTests {
    /// parley read the passwd entry's home directory, so a HOME set by the user (or a test,
    /// a container, `sudo -H`) was ignored when no XDG variable was set.
    @Test func theConfigAndCacheFollowHOMEThenTheXDGVariables() async throws {
        try await withServer { server in
            try await server.createAccount("alice")
            let cli = try CLI(server: server)
            let home = cli.home
            try cli.writeConfig("alice", password: TestServer.password, at: home + "/.config/parley/config.json")
            var result = try await cli.run(["roster"], environment: ["HOME": home, "PATH": "/usr/bin:/bin"])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(FileManager.default.fileExists(atPath: home + "/.local/share/parley/alice@localhost.sqlite"))

            // XDG variables win over HOME; an empty or relative one is ignored (XDG spec).
            try cli.writeConfig("alice", password: TestServer.password, at: home + "/xdg-config/parley/config.json")
            try FileManager.default.removeItem(atPath: home + "/.config/parley/config.json")
            result = try await cli.run(["roster"], environment: [
                "HOME": home, "XDG_CONFIG_HOME": home + "/xdg-config", "XDG_DATA_HOME": home + "/xdg-data", "PATH": "/usr/bin:/bin",
            ])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(FileManager.default.fileExists(atPath: home + "/xdg-data/parley/alice@localhost.sqlite"))
            result = try await cli.run(["roster"], environment: ["HOME": home, "XDG_CONFIG_HOME": "relative", "PATH": "/usr/bin:/bin"])
            #expect(result.status == 1 && result.stderr.contains(home + "/.config/parley/config.json"), "\(result.stderr)")
        }
    }

    /// `parley roster` listed neither the requests waiting for the user's answer nor the
    /// user's own unanswered ones.
    @Test func rosterShowsFriendRequestsWaitingEitherWay() async throws {
        try await withServer { server in
            for user in ["alice", "bob", "carol"] { try await server.createAccount(user) }
            let cli = try CLI(server: server)
            try cli.writeConfig("alice", password: TestServer.password)
            // Carol asks while Alice is offline; Alice asks Bob, who never answers.
            let (carol, _) = try server.client("carol")
            try await carol.connect()
            try await carol.addContact(try JID("alice@localhost"), message: "it's Carol")
            try await carol.settle()
            await carol.disconnect()
            #expect(try await cli.run(["add", "bob@localhost", "--config", cli.config("alice")]).status == 0)

            var result = try await cli.run(["roster", "--config", cli.config("alice")])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("carol@localhost  wants to be your friend: \"it's Carol\" — parley accept carol@localhost"), "\(result.stdout)")
            #expect(result.stdout.contains("bob@localhost  not subscribed, request sent, waiting for an answer"), "\(result.stdout)")

            #expect(try await cli.run(["accept", "carol@localhost", "--config", cli.config("alice")]).status == 0)
            result = try await cli.run(["roster", "--config", cli.config("alice")])
            #expect(!result.stdout.contains("wants to be your friend"), "\(result.stdout)")
            #expect(result.stdout.contains("carol@localhost  they see you"), "\(result.stdout)")
        }
    }

    /// Each of the recipient's devices returns a receipt: the sender's chat said
    /// "✓✓ delivered" once per device. A step shows once, and only forward.
    @Test func aMessageShowsDeliveredOnceWhateverTheNumberOfReceipts() async throws {
        try await withServer { server in
            for user in ["alice", "bob", "carol", "dave"] { try await server.createAccount(user) }
            let cli = try CLI(server: server)
            try cli.writeConfig("alice", password: nil)
            let alice = try TerminalSession(cli, ["chat", "--config", cli.config("alice")], name: "alice")
            defer { alice.end() }
            let (phone, phoneEvents) = try server.client("bob", resource: "phone")
            let (laptop, _) = try server.client("bob", resource: "laptop")
            do {
                try await phone.connect()
                try await laptop.connect()
                try await alice.waitFor("type /help for commands")
                try alice.type("/add bob@localhost")
                try await phoneEvents.next("Alice's request") { if case .contactRequest = $0 { true } else { false } }
                await phone.accept(try JID("alice@localhost"))
                try await alice.waitFor("bob@localhost accepted your request")

                try alice.type("/to bob@localhost")
                try alice.type("one message, two devices")
                let received = try await phoneEvents.next("the message") { if case .message(let m) = $0 { m.body == "one message, two devices" } else { false } }
                guard case .message(let message) = received, let id = message.id else { return }
                try await alice.waitFor("✓✓ delivered: “one message, two devices”")
                // The laptop confirms it too, as a second device does.
                await laptop.xmpp.send(Self.receipt(for: id))
                try await laptop.settle()
                try await Task.sleep(for: .milliseconds(500))
                #expect(alice.screen.components(separatedBy: "✓✓ delivered: “one message, two devices”").count == 2, "\(alice.screen)")
                // Read, then a late receipt: no step back to "delivered".
                try await phone.markRead(try JID("alice@localhost"))
                try await alice.waitFor("✓✓ read: “one message, two devices”")
                await laptop.xmpp.send(Self.receipt(for: id))
                try await laptop.settle()
                try await Task.sleep(for: .milliseconds(500))
                let afterRead = alice.screen.components(separatedBy: "✓✓ read: “one message, two devices”").last ?? ""
                #expect(!afterRead.contains("delivered") && !afterRead.contains("✓ sent"), "\(afterRead)")

                // The chat's roster view shows a request waiting for an answer, and one sent.
                let (carol, _) = try server.client("carol")
                try await carol.connect()
                try await carol.addContact(try JID("alice@localhost"), message: "hi")
                try await alice.waitFor("carol@localhost wants to be friends")
                // Dave has an account but is not online to answer.
                try alice.type("/add dave@localhost")
                try await alice.waitFor("carol@localhost  wants to be your friend: \"hi\" — /accept carol@localhost", retyping: "/roster")
                try await alice.waitFor("dave@localhost  not subscribed, request sent, waiting for an answer", retyping: "/roster")
                await carol.disconnect()
                try alice.type("/quit")
                #expect(try await alice.waitForExit() == 0)
            } catch {
                print("--- alice's terminal ---\n\(alice.screen)")
                await phone.disconnect()
                await laptop.disconnect()
                throw error
            }
            await phone.disconnect()
            await laptop.disconnect()
        }
    }

    static func receipt(for id: String) -> XMLElement {
        var receipt = XMLElement("message", namespace: XMLNamespace.client, ["to": "alice@localhost", "id": UUID().uuidString])
        receipt.append(XMLElement("received", namespace: XMLNamespace.receipts, ["id": id]))
        return receipt
    }
}

/// The library's side of the same bug: one `.delivered` event per message.
@Suite struct ReceiptsFromSeveralDevicesTests {
    @Test func aReceiptFromEachDeviceReportsDeliveryOnce() async throws {
        try await withServer { server in
            let ((alice, aliceEvents), (phone, phoneEvents)) = try await server.signedInPair("alice", "bob")
            try await befriend(alice, aliceEvents, phone, phoneEvents, note: nil)
            let (laptop, _) = try server.client("bob", resource: "laptop")
            try await laptop.connect()
            let id = await alice.sendMessage(to: try JID("bob@localhost"), body: "hello")
            try await aliceEvents.next("the phone's receipt") { if case .delivered(id, _) = $0 { true } else { false } }
            await laptop.xmpp.send(CLIBugTests.receipt(for: id))
            await laptop.xmpp.send(CLIBugTests.receipt(for: id))
            try await laptop.settle()
            try await alice.settle()
            try await Task.sleep(for: .milliseconds(200))
            #expect(aliceEvents.all.filter { if case .delivered(id, _) = $0 { true } else { false } }.count == 1)
            #expect(try await alice.history(with: try JID("bob@localhost")).map(\.state) == [.delivered])
            await alice.disconnect()
            await phone.disconnect()
            await laptop.disconnect()
        }
    }
}
