import ParleyCore
@testable import ParleyServer
import ParleyStorage
import Testing

/// XEP-0198 acknowledgements mean "stored": the `h` of an `<a/>` or `<resumed/>` counts a
/// message only once its archive rows are committed, so a server killed right after loses
/// nothing it acknowledged; any other answer after a message (an iq result) waits likewise.
/// Messages themselves are delivered at once and share group commits. The database's write lock stands in for a slow disk.
@Suite struct DurableAcknowledgementScenarios {
    private static let sm = TestClient.sm

    private func available(_ server: TestServer, _ username: String, resource: String) async throws -> TestClient {
        let client = try await server.login(username, resource: resource)
        try await client.send("<presence/>")
        try await client.expect("presence")
        return client
    }

    private func archived(_ server: TestServer, _ user: String) async throws -> Int {
        try await server.running.storage.queryArchive(user: user, ArchiveQuery(max: 100)).messages.count
    }

    @Test func theAnswerToARequestComesOnlyOnceTheArchiveRowsAreCommitted() async throws {
        try await TestServer.with { server in
            let bob = try await available(server, "bob", resource: "home")
            let alice = try await server.login("alice", resource: "work")
            try await alice.enableStreamManagement(resume: false)
            let disk = await DatabaseWriteLock.hold(server.running.storage)
            for index in 1...5 {
                try await alice.send("<message to='bob@localhost' type='chat' id='m\(index)'><body>\(index)</body></message>")
            }
            // Delivery does not wait for the archive.
            for index in 1...5 { #expect(try await bob.expect("message").id == "m\(index)") }
            try await alice.send("<r xmlns='urn:xmpp:sm:3'/>")
            try await alice.expectSilence(for: .milliseconds(300))
            await disk.release()
            let answer = try await alice.expect("a", namespace: Self.sm)
            #expect(answer[attribute: "h"] == "5")
            // Read the moment the answer came: every row it counts is there.
            #expect(try await archived(server, "bob") == 5)
            #expect(try await archived(server, "alice") == 5)
            // Nothing left to wait for: the next request is answered at once.
            #expect(try await alice.requestAcknowledgement() == 5)
        }
    }

    @Test func withoutRequestsMessagesFlowAndShareCommits() async throws {
        try await TestServer.with { server in
            let bob = try await available(server, "bob", resource: "home")
            let alice = try await server.login("alice", resource: "work")
            try await alice.enableStreamManagement(resume: false)
            let writer = try #require(server.running.context.archive)
            let before = writer.committedBatches
            let disk = await DatabaseWriteLock.hold(server.running.storage)
            for index in 1...20 {
                try await alice.send("<message to='bob@localhost' type='chat' id='m\(index)'><body>\(index)</body></message>")
            }
            for index in 1...20 { #expect(try await bob.expect("message").id == "m\(index)") }
            // Any later answer tells the sender its messages were taken, so it waits for their
            // rows like an `<a/>` does (issue 17): the ping is answered after the commit.
            try await alice.send("<iq type='get' id='ping'><ping xmlns='urn:xmpp:ping'/></iq>")
            try await alice.expectSilence(for: .milliseconds(300))
            await disk.release()
            let pong = try await alice.expect("iq")
            #expect(pong.type == "result" && pong.id == "ping")
            #expect(try await archived(server, "alice") == 20)
            await writer.flush()
            #expect(try await archived(server, "bob") == 20)
            // The first message's transaction was waiting on the disk; the other nineteen
            // queued behind it and went in together.
            let commits = writer.committedBatches - before
            #expect(commits >= 1 && commits <= 2)
        }
    }

    @Test func resumptionReportsOnlyWhatIsStored() async throws {
        try await TestServer.with { server in
            let bob = try await available(server, "bob", resource: "home")
            let alice = try await server.login("alice", resource: "phone")
            let enabled = try await alice.enableStreamManagement(resume: true)
            let id = try #require(enabled[attribute: "id"])
            let disk = await DatabaseWriteLock.hold(server.running.storage)
            for index in 1...3 {
                try await alice.send("<message to='bob@localhost' type='chat' id='m\(index)'><body>\(index)</body></message>")
            }
            for _ in 1...3 { try await bob.expect("message") }
            await alice.close()
            try await Task.sleep(for: .milliseconds(200))

            let again = try await server.connect()
            try await again.authenticate("alice")
            try await again.send("<resume xmlns='urn:xmpp:sm:3' previd='\(id)' h='0'/>")
            try await again.expectSilence(for: .milliseconds(300))
            await disk.release()
            let resumed = try await again.expect("resumed", namespace: Self.sm)
            #expect(resumed[attribute: "h"] == "3")
            #expect(try await archived(server, "bob") == 3)
        }
    }

    @Test func withoutAnArchiveAnswersAreImmediate() async throws {
        try await TestServer.with({ $0.archive.enabled = false }) { server in
            let bob = try await available(server, "bob", resource: "home")
            let alice = try await server.login("alice", resource: "work")
            try await alice.enableStreamManagement(resume: false)
            #expect(server.running.context.archive == nil)
            let disk = await DatabaseWriteLock.hold(server.running.storage)
            try await alice.send("<message to='bob@localhost' type='chat' id='m1'><body>1</body></message>")
            try await bob.expect("message")
            #expect(try await alice.requestAcknowledgement() == 1)
            await disk.release()
        }
    }
}
