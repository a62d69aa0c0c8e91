import ParleyCore
@testable import ParleyServer
import ParleyStorage
import Testing

/// An XEP-0198 `<r/>` waits for the archive rows of the messages it counts, but only its own
/// `<a/>` waits: the stream reads on, so the sender's next messages are delivered at once and
/// join the same group commit, and the answers come once committed, in the order asked for,
/// each with the count of when it was asked (issue 17: clients that ask after every message
/// would otherwise get one commit per message).
@Suite struct DeferredAcknowledgementScenarios {
    private static let sm = TestClient.sm

    private func available(_ server: TestServer, _ username: String, resource: String) async throws -> TestClient {
        let client = try await server.login(username, resource: resource)
        try await client.send("<presence/>")
        try await client.expect("presence")
        return client
    }

    private func archived(_ server: TestServer, _ user: String) async throws -> [String] {
        try await server.running.storage.queryArchive(user: user, ArchiveQuery(max: 100)).messages.compactMap(\.messageID)
    }

    @Test func aRequestHoldsOnlyItsOwnAnswer() async throws {
        try await TestServer.with { server in
            let bob = try await available(server, "bob", resource: "home")
            let alice = try await server.login("alice", resource: "work")
            try await alice.enableStreamManagement(resume: false)
            let disk = await DatabaseWriteLock.hold(server.running.storage)
            try await alice.send("<message to='bob@localhost' type='chat' id='m1'><body>1</body></message>")
            try await alice.send("<r xmlns='urn:xmpp:sm:3'/>")
            try await alice.send("<message to='bob@localhost' type='chat' id='m2'><body>2</body></message>")
            try await alice.send("<r xmlns='urn:xmpp:sm:3'/>")
            try await alice.send("<message to='bob@localhost' type='chat' id='m3'><body>3</body></message>")
            // The requests did not stop the stream: every message arrives while the disk waits.
            for index in 1...3 { #expect(try await bob.expect("message").id == "m\(index)") }
            try await alice.expectSilence(for: .milliseconds(300))
            #expect(try await archived(server, "alice").isEmpty)
            await disk.release()
            let first = try await alice.expect("a", namespace: Self.sm)
            // Read the moment the answer came: every row it counts is there.
            #expect(try await archived(server, "bob").prefix(1) == ["m1"])
            let second = try await alice.expect("a", namespace: Self.sm)
            #expect(first[attribute: "h"] == "1" && second[attribute: "h"] == "2")
            #expect(try await archived(server, "alice").prefix(2) == ["m1", "m2"])
            #expect(try await alice.requestAcknowledgement() == 3)
        }
    }

    @Test func aLaterRequestIsAnsweredAfterTheEarlierOneWithItsOwnCount() async throws {
        try await TestServer.with { server in
            let bob = try await available(server, "bob", resource: "home")
            let alice = try await server.login("alice", resource: "work")
            try await alice.enableStreamManagement(resume: false)
            let disk = await DatabaseWriteLock.hold(server.running.storage)
            try await alice.send("<message to='bob@localhost' type='chat' id='m1'><body>1</body></message>")
            try await alice.send("<r xmlns='urn:xmpp:sm:3'/>")
            // Counted, not archived (a chat state alone is not kept): nothing of its own to wait for.
            try await alice.send(
                "<message to='bob@localhost' type='chat' id='s1'><active xmlns='http://jabber.org/protocol/chatstates'/></message>")
            try await alice.send("<r xmlns='urn:xmpp:sm:3'/>")
            try await bob.expect("message")
            try await bob.expect("message")
            try await alice.expectSilence(for: .milliseconds(200))
            await disk.release()
            let first = try await alice.expect("a", namespace: Self.sm)
            let second = try await alice.expect("a", namespace: Self.sm)
            #expect(first[attribute: "h"] == "1" && second[attribute: "h"] == "2")
        }
    }
}
