import Foundation
import ParleyClient
import ParleyCore
import Testing

/// A server that resumes the client's session and then handles nothing the client sends
/// (seen with Prosody 0.12: a session whose processing died with its connection). Resuming it
/// after every heartbeat timeout would keep the client's messages from ever arriving; the
/// client must give that session up and bind a new one.
@Suite struct UnresponsiveResumptionTests {
    @Test(arguments: [false, true])
    func aResumedSessionThatNeverAnswersIsReplacedByANewOne(whileMessagesKeepComing: Bool) async throws {
        let server = try await TestServer.start { configuration in
            // Plain TCP, so that the proxy sees the client's <resume/>; TLS is not under test.
            configuration.tls.required = false
        }
        let proxy = try await ResumeSwallowingProxy.start(upstreamPort: server.running.c2sPort)
        do {
            try await server.createAccount("alice")
            try await server.createAccount("bob")
            var configuration = try server.configuration(for: "alice")
            configuration.security = .none
            configuration.port = proxy.port
            configuration.heartbeatInterval = .milliseconds(500)
            configuration.heartbeatTimeout = .milliseconds(500)
            configuration.reconnect.initialDelay = .milliseconds(50)
            configuration.reconnect.maximumDelay = .milliseconds(200)
            let alice = try ChatClient(
                configuration: configuration, cachePath: server.directory + "/clients/alice.sqlite", logger: quietLogger("client.alice"))
            let aliceEvents = EventRecorder(alice.events)
            let (bob, bobEvents) = try server.client("bob")
            try await alice.connect()
            try await bob.connect()
            try await aliceEvents.next("the first session") { if case .connected = $0 { true } else { false } }

            proxy.cutAll()
            try await aliceEvents.next("the session resumed behind the proxy") { if case .resumed = $0 { true } else { false } }
            // Bob's messages still reach the dead session, so the server is never silent: only
            // the unanswered <r/> tells.
            let chatter = Task {
                while whileMessagesKeepComing, !Task.isCancelled {
                    _ = await bob.sendMessage(to: try JID("alice@localhost"), body: "still there?")
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            defer { chatter.cancel() }
            let id = await alice.sendMessage(to: try JID("bob@localhost"), body: "said after the resumption")
            // The proxy swallows it; the heartbeat finds the server silent, and a new session
            // (no <resume/> for the proxy to catch) carries the message.
            try await aliceEvents.next(within: .seconds(15), "a new session") { if case .connected = $0 { true } else { false } }
            try await bobEvents.next(within: .seconds(15), "Alice's message") {
                if case .message(let message) = $0 { message.id == id } else { false }
            }
            #expect(!aliceEvents.all.contains { if case .kicked = $0 { true } else { false } })
            await alice.disconnect()
            await bob.disconnect()
        } catch {
            await proxy.stop()
            await server.stop()
            throw error
        }
        await proxy.stop()
        await server.stop()
    }
}
