import Foundation
import ParleyTestSupport
import Testing

/// Group chat in `parley`: the room commands of the interactive chat on a pseudo-terminal
/// (three users of one parleyd), and the one-shot `parley room send` with its exit codes.
@Suite(.serialized, .enabled(if: CLI.executable != nil, "the parley executable is built next to the tests"))
struct RoomCLITests {
    static let room = "team@conference.localhost"

    @Test func roomCommandsInTheChatAndFromScripts() async throws {
        try await withServer { server in
            for user in ["alice", "bob", "carol"] { try await server.createAccount(user) }
            let cli = try CLI(server: server)
            try cli.writeConfig("alice", password: nil)
            try cli.writeConfig("bob", password: nil)
            try cli.writeConfig("carol", password: TestServer.password)
            let alice = try TerminalSession(cli, ["chat", "--config", cli.config("alice")], name: "alice")
            let bob = try TerminalSession(cli, ["chat", "--config", cli.config("bob")], name: "bob")
            defer { for session in [alice, bob] { session.end() } }
            do {
                for session in [alice, bob] { try await session.waitFor("type /help for commands") }

                // A room named without its service is looked up on the server (disco).
                try alice.type("/join team")
                try await alice.waitFor("now talking in \(Self.room) as alice")
                try await alice.waitFor("you joined \(Self.room) as alice (a new room)")
                try bob.type("/join \(Self.room) Bobby")
                try await bob.waitFor("now talking in \(Self.room) as Bobby")
                try await alice.waitFor("Bobby joined \(Self.room)")

                // Lines go to the current room; Bob's nickname is highlighted where it is named.
                try alice.type("hi Bobby, welcome")
                try await bob.waitFor("\(Self.room) alice: hi Bobby, welcome")
                #expect(bob.rawScreen.contains("hi \u{1B}[1;33mBobby\u{1B}[0m, welcome"), "\(bob.rawScreen)")
                #expect(!alice.rawScreen.contains("\u{1B}[1;33mBobby"), "no highlight for a name that is not one's own")

                try bob.type("/who")
                try await bob.waitFor("alice  moderator, owner")
                try await bob.waitFor("Bobby  participant, none")

                try alice.type("/topic Friday plans")
                try await bob.waitFor("alice set the topic of \(Self.room): Friday plans")
                try bob.type("/topic")
                try await bob.waitFor("topic of \(Self.room): Friday plans")
                // A participant may not: the room's refusal, in words.
                try bob.type("/topic my plans")
                try await bob.waitFor("refused: Only moderators may change the subject of this room. (forbidden)")
                try bob.type("/kick alice")
                try await bob.waitFor("refused: Only moderators change roles. (forbidden)")

                try alice.type("/invite carol@localhost see you there")
                try await alice.waitFor("invited carol@localhost to \(Self.room)")

                try alice.type("/rooms")
                try await alice.waitFor("\(Self.room) as alice, 2 in the room — Friday plans")
                try await alice.waitFor("public rooms at conference.localhost:")

                // A script says something in the room: it enters, speaks and leaves.
                var result = try await cli.run(["room", "send", Self.room, "from a script", "--config", cli.config("carol")])
                #expect(result.status == 0 && result.stdout.contains("to \(Self.room)"), "\(result)")
                try await alice.waitFor("\(Self.room) carol: from a script")
                try await alice.waitFor("carol left (\(Self.room))")

                try alice.type("/kick Bobby too loud")
                try await bob.waitFor("you were kicked by alice: too loud (\(Self.room))")
                try await alice.waitFor("Bobby was kicked by alice: too loud (\(Self.room))")
                try bob.type("/join team Bobby")
                try await waitFor(bob, "now talking in \(Self.room) as Bobby", times: 2)
                try await waitFor(alice, "Bobby joined \(Self.room)", times: 2)
                try alice.type("/ban bob@localhost spam")
                try await alice.waitFor("banned bob@localhost from \(Self.room)")
                try await bob.waitFor("you were banned by alice: spam (\(Self.room))")
                try bob.type("/join team Bobby")
                try await bob.waitFor("refused: You are banned from this room. (forbidden)")
                try bob.type("/who")
                try await bob.waitFor("no current room: /join ROOM first")

                // Refusals end a script with the documented code (4), usage errors with 1.
                try cli.writeConfig("bob", password: TestServer.password)
                result = try await cli.run(["room", "send", Self.room, "let me in", "--config", cli.config("bob")])
                #expect(result.status == 4 && result.stderr.contains("refused: You are banned from this room. (forbidden)"), "\(result)")
                result = try await cli.run(["room", "send", "conference.localhost", "hello", "--config", cli.config("bob")])
                #expect(result.status == 1, "\(result)")

                try alice.type("/leave")
                try await alice.waitFor("you left \(Self.room)")
            } catch {
                print("--- alice ---\n\(alice.screen)\n--- bob ---\n\(bob.screen)")
                throw error
            }
        }
    }

    /// Waits until `text` shows `times` times on the screen (which keeps everything printed).
    private func waitFor(_ session: TerminalSession, _ text: String, times: Int, within timeout: Duration = .seconds(15)) async throws {
        let deadline = ContinuousClock.now + timeout
        while session.screen.components(separatedBy: text).count - 1 < times {
            guard ContinuousClock.now < deadline else {
                throw TimedOut(description: "\(session.name)'s terminal did not show \"\(text)\" \(times) times; it shows:\n\(session.screen)")
            }
            try await Task.sleep(for: .milliseconds(25))
        }
    }
}
