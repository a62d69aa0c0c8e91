import Foundation
import ParleyTestSupport
import ParleyClient
import ParleyCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A client killed mid-session (no `</stream:stream>`, no TLS close_notify) must leave the
/// server's routing, so that messages to it wait in offline storage. Found with the CLI: the
/// session stayed bound, and the next message to it made the server redeliver it to the same
/// dead session until the stack overflowed. The client asked for resumption (XEP-0198), so
/// the session first waits for it to come back, for the server's resume timeout.
@Suite(.serialized, .enabled(if: CLI.executable != nil, "the parley executable is built next to the tests"))
struct VanishedClientTests {
    @Test func aKilledClientIsUnboundAndItsMessagesWaitOffline() async throws {
        try await withServer(resumeTimeout: .seconds(1)) { server in
            try await server.createAccount("alice")
            try await server.createAccount("bob")
            let cli = try CLI(server: server)
            try cli.writeConfig("bob", password: TestServer.password)
            let bobJID = try JID("bob@localhost")
            let sessions = server.running.context.sessions

            let chat = Process()
            chat.executableURL = CLI.executable
            chat.arguments = ["chat", "--config", cli.config("bob")]
            chat.environment = ["HOME": cli.home, "XDG_DATA_HOME": cli.home + "/data", "PATH": "/usr/bin:/bin"]
            let input = Pipe()  // kept open: the REPL waits for lines
            chat.standardInput = input
            chat.standardOutput = FileHandle.nullDevice
            chat.standardError = FileHandle.nullDevice
            try ProcessLaunch.run(chat)
            try await eventually("bob's REPL signs in") { !sessions.sessions(of: bobJID).isEmpty }
            kill(chat.processIdentifier, SIGKILL)
            try await eventually("the dead session is unbound") { sessions.sessions(of: bobJID).isEmpty }

            let (alice, _) = try server.client("alice")
            try await alice.connect()
            let id = await alice.sendMessage(to: bobJID, body: "are you still there?")
            try await alice.settle()
            await alice.disconnect()

            let (bob, bobEvents) = try server.client("bob")
            try await bob.connect()
            try await bobEvents.next("the message from offline storage") {
                if case .message(let message) = $0 { message.id == id && message.delayedUntil != nil } else { false }
            }
            await bob.disconnect()
        }
    }
}
