import ParleyCore
@testable import ParleyServer
import ParleyStorage
import Testing

/// A client whose resumption failed resends what was never acknowledged: a message whose
/// origin-id (XEP-0359) its sender already used towards the same bare JID is not routed again
/// (no second delivery, no second archive row), across restarts too, yet counts as handled.
@Suite struct DuplicateMessageScenarios {
    private func available(_ server: TestServer, _ username: String, resource: String) async throws -> TestClient {
        let client = try await server.login(username, resource: resource)
        try await client.send("<presence/>")
        try await client.expect("presence")
        return client
    }

    private func message(to: String, id: String, originID: String) -> String {
        "<message to='\(to)' type='chat' id='\(id)'><body>\(id)</body><origin-id xmlns='urn:xmpp:sid:0' id='\(originID)'/></message>"
    }

    private func archivedBodies(_ server: TestServer, _ user: String) async throws -> [String] {
        await server.running.archive.flush()
        let page = try await server.running.storage.queryArchive(user: user, ArchiveQuery(max: 100))
        return page.messages.compactMap { $0.stanza.flatMap(StoredStanza.parse)?.firstChild("body")?.text }
    }

    @Test func aResentOriginIDIsDeliveredAndArchivedOnce() async throws {
        try await TestServer.with { server in
            let bob = try await available(server, "bob", resource: "home")
            let alice = try await server.login("alice", resource: "work")
            try await alice.enableStreamManagement(resume: false)
            try await alice.send(message(to: "bob@localhost", id: "first", originID: "o1"))
            try await alice.send(message(to: "bob@localhost/home", id: "resent", originID: "o1"))
            try await alice.send(message(to: "bob@localhost", id: "next", originID: "o2"))
            #expect(try await bob.expect("message").id == "first")
            #expect(try await bob.expect("message").id == "next")
            // All three count as handled.
            #expect(try await alice.requestAcknowledgement() == 3)
            #expect(try await archivedBodies(server, "bob") == ["first", "next"])
            #expect(try await archivedBodies(server, "alice") == ["first", "next"])
            try await bob.expectSilence(for: .milliseconds(200))
        }
    }

    @Test func anotherSenderOrAnotherRecipientIsNotADuplicate() async throws {
        try await TestServer.with(accounts: TestServer.threeAccounts) { server in
            let bob = try await available(server, "bob", resource: "home")
            let carol = try await available(server, "carol", resource: "home")
            let alice = try await server.login("alice", resource: "work")
            try await alice.send(message(to: "bob@localhost", id: "alice-to-bob", originID: "same"))
            #expect(try await bob.expect("message").id == "alice-to-bob")
            try await carol.send(message(to: "bob@localhost", id: "carol-to-bob", originID: "same"))
            #expect(try await bob.expect("message").id == "carol-to-bob")
            try await alice.send(message(to: "carol@localhost", id: "alice-to-carol", originID: "same"))
            #expect(try await carol.expect("message").id == "alice-to-carol")
            // Without an origin-id nothing is suppressed.
            for id in ["plain", "plain"] {
                try await alice.send("<message to='bob@localhost' type='chat' id='\(id)'><body>x</body></message>")
                #expect(try await bob.expect("message").id == id)
            }
        }
    }

    @Test func aResendAfterARestartIsRecognisedFromTheArchive() async throws {
        try await TestServer.with { server in
            let bob = try await available(server, "bob", resource: "home")
            let alice = try await server.login("alice", resource: "work")
            try await alice.send(message(to: "bob@localhost", id: "before", originID: "o1"))
            #expect(try await bob.expect("message").id == "before")
            await server.running.archive.flush()

            try await server.restart()
            let bobAgain = try await available(server, "bob", resource: "home")
            let aliceAgain = try await server.login("alice", resource: "work")
            try await aliceAgain.send(message(to: "bob@localhost", id: "resent", originID: "o1"))
            try await aliceAgain.send(message(to: "bob@localhost", id: "after", originID: "o2"))
            #expect(try await bobAgain.expect("message").id == "after")
            #expect(try await archivedBodies(server, "bob") == ["before", "after"])
        }
    }

    @Test func withoutAnArchiveDuplicatesAreRememberedInMemory() async throws {
        try await TestServer.with({ $0.archive.enabled = false }) { server in
            let bob = try await available(server, "bob", resource: "home")
            let alice = try await server.login("alice", resource: "work")
            try await alice.send(message(to: "bob@localhost", id: "first", originID: "o1"))
            #expect(try await bob.expect("message").id == "first")
            // A new session of the same account, as after a failed resumption.
            await alice.close()
            let again = try await server.login("alice", resource: "work")
            try await again.send(message(to: "bob@localhost", id: "resent", originID: "o1"))
            try await again.send(message(to: "bob@localhost", id: "next", originID: "o2"))
            #expect(try await bob.expect("message").id == "next")
        }
    }
}
