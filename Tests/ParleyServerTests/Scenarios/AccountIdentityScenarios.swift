import Logging
import ParleyCore
@testable import ParleyServer
import ParleyStorage
import Testing

/// An account deleted by the administrator (`parleyd deluser`, another process) and created
/// again under the same name is a new account: the deletion, which the server learns from
/// the change feed a moment later, ends only the old account's sessions.
@Suite struct AccountIdentityScenarios {
    @Test func aDeletionSeenAfterTheNameWasReusedEndsOnlyTheOldAccountsSessions() async throws {
        // The server's own watcher does not look during the test; the test makes the poll
        // itself once everything below has happened, as it would when an admin script runs
        // deluser and adduser and the user logs in again within a second.
        try await TestServer.with({ $0.sessions.accountChangePollInterval = .seconds(600) }) { server in
            let storage = server.running.storage
            let cursor = try await storage.latestChangeID()
            let old = try await server.login("alice", resource: "old")
            #expect(try await storage.deleteAccount(username: "alice", origin: .admin))
            try await server.createAccount("alice", password: "new-password")
            let new = try await server.login("alice", password: "new-password", resource: "new")
            #expect(try await old.sync().isEmpty)

            let watcher = AccountChangeWatcher(
                feed: storage, sessions: server.running.context.sessions, domain: try JID("localhost"),
                logger: Logger(label: "test"), interval: .seconds(1))
            #expect(try await watcher.poll(after: cursor) > cursor)

            let error = try await old.expectStreamError(.notAuthorized)
            #expect(error.text == "Your account was removed.")
            // The new account's session outlives the deletion it has nothing to do with.
            try await new.expectSilence(for: .milliseconds(300))
            let reply = try await new.query("<iq type='get' id='still'><ping xmlns='urn:xmpp:ping'/></iq>", id: "still")
            #expect(reply.type == "result")
            let alice = try JID("alice@localhost")
            #expect(server.running.context.sessions.sessions(of: alice).map(\.jid.resourcepart) == ["new"])
        }
    }

    @Test func aNewAccountWithTheSameNameCannotResumeTheOldOnesSession() async throws {
        try await TestServer.with({ $0.sessions.accountChangePollInterval = .seconds(600) }) { server in
            let old = try await server.login("alice", resource: "phone")
            let id = try #require(try await old.enableStreamManagement(resume: true)[attribute: "id"])
            await old.close()
            try await Task.sleep(for: .milliseconds(200))
            #expect(try await server.running.storage.deleteAccount(username: "alice", origin: .admin))
            try await server.createAccount("alice", password: "new-password")

            let again = try await server.connect()
            try await again.authenticate("alice", password: "new-password")
            try await again.send("<resume xmlns='urn:xmpp:sm:3' previd='\(id)' h='0'/>")
            let failed = try await again.expect("failed", namespace: TestClient.sm)
            #expect(failed.firstChild("item-not-found", namespace: "urn:ietf:params:xml:ns:xmpp-stanzas") != nil, "\(failed.xmlString())")
            #expect(failed[attribute: "h"] == nil, "the old session's count is none of the new account's business")
        }
    }

    @Test func aNewAccountDoesNotInheritTheDeletedOnesBlockList() async throws {
        try await TestServer.with({ $0.sessions.accountChangePollInterval = .seconds(600) }) { server in
            let storage = server.running.storage
            let cursor = try await storage.latestChangeID()
            let old = try await server.login("alice", resource: "old")
            let block = "<iq type='set' id='b1'><block xmlns='urn:xmpp:blocking'><item jid='bob@localhost'/></block></iq>"
            #expect(try await old.query(block, id: "b1").type == "result")
            #expect(try await storage.deleteAccount(username: "alice", origin: .admin))
            try await server.createAccount("alice", password: "new-password")

            let watcher = AccountChangeWatcher(
                feed: storage, sessions: server.running.context.sessions, domain: try JID("localhost"),
                logger: Logger(label: "test"), interval: .seconds(1), events: server.running.context.events)
            _ = try await watcher.poll(after: cursor)
            _ = try await old.expectStreamError(.notAuthorized)

            // The block list is read again in the background; the new account's is empty.
            let new = try await server.login("alice", password: "new-password", resource: "new")
            try await new.available()
            let deadline = ContinuousClock.now + .seconds(5)
            var items: [XMLElement] = []
            repeat {
                let list = try await new.query("<iq type='get' id='l'><blocklist xmlns='urn:xmpp:blocking'/></iq>", id: "l")
                items = list.firstChild("blocklist", namespace: "urn:xmpp:blocking")?.children("item", namespace: "urn:xmpp:blocking") ?? []
                if !items.isEmpty { try await Task.sleep(for: .milliseconds(20)) }
            } while !items.isEmpty && ContinuousClock.now < deadline
            #expect(items.isEmpty, "the deleted account's block list is still applied: \(items.map { $0.xmlString() })")
            let bob = try await server.login("bob", resource: "b")
            try await bob.sendMessage(to: "alice@localhost/new", id: "hello")
            try await new.expectMessage(id: "hello")
        }
    }

    @Test func theChangeFeedNamesTheAccountItChanged() async throws {
        try await TestServer.with { server in
            let storage = server.running.storage
            let start = try await storage.latestChangeID()
            let first = try #require(try await storage.account(username: "alice")?.id)
            try await storage.deleteAccount(username: "alice", origin: .admin)
            try await server.createAccount("alice", password: "again-password")
            let second = try #require(try await storage.account(username: "alice")?.id)
            #expect(first != second, "AUTOINCREMENT never hands an id out twice")
            try await storage.updateKeys(
                username: "alice", keys: try AccountKeys.derive(password: "changed-password", iterations: 4096), origin: .admin)
            try await storage.deleteAccount(username: "alice", origin: .admin)
            let changes = try await storage.changes(after: start)
            #expect(changes.map(\.accountID) == [first, second, second])
            #expect(changes.map(\.kind) == [.deleted, .passwordChanged, .deleted])
        }
    }
}
