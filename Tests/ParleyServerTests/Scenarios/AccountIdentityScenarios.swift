import ParleyCore
import ParleyStorage
import Testing

/// An account deleted by the administrator (`parleyd deluser`, another process) and created
/// again under the same name is a new account: the deletion, which the server learns from
/// the change feed a moment later, ends only the old account's sessions.
@Suite struct AccountIdentityScenarios {
    @Test func aDeletionSeenAfterTheNameWasReusedEndsOnlyTheOldAccountsSessions() async throws {
        // The watcher looks late, so everything below happens before it does, as it would
        // when an admin script runs deluser, adduser and the user logs in within a second.
        try await TestServer.with({ $0.sessions.accountChangePollInterval = .seconds(3) }) { server in
            let old = try await server.login("alice", resource: "old")
            try await old.sync()
            #expect(try await server.running.storage.deleteAccount(username: "alice", origin: .admin))
            try await server.createAccount("alice", password: "new-password")
            let new = try await server.login("alice", password: "new-password", resource: "new")
            // The race really happened: the old session is still there when the new one is bound.
            #expect(try await old.sync().isEmpty, "the old session ended before the new login; the race was not exercised")

            let error = try await old.expectStreamError(.notAuthorized, timeout: .seconds(10))
            #expect(error.text == "Your account was removed.")
            // The new account's session outlives the deletion it has nothing to do with.
            try await new.expectSilence(for: .milliseconds(300))
            let reply = try await new.query("<iq type='get' id='still'><ping xmlns='urn:xmpp:ping'/></iq>", id: "still")
            #expect(reply.type == "result")
            let alice = try JID("alice@localhost")
            #expect(server.running.context.sessions.sessions(of: alice).map(\.jid.resourcepart) == ["new"])
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
            try await storage.deleteAccount(username: "alice", origin: .admin)
            let changes = try await storage.changes(after: start)
            #expect(changes.map(\.accountID) == [first, second])
            #expect(changes.allSatisfy { $0.kind == .deleted && $0.username == "alice" })
        }
    }
}
