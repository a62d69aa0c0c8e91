import Foundation
import ParleyStorage
import Testing

@Suite struct AccountStoreTests {
    static func keys(_ hashName: String, seed: UInt8) -> StoredSCRAMKeys {
        StoredSCRAMKeys(
            hashName: hashName, salt: [seed, 0, 0xFF], iterations: 4096,
            storedKey: Array(repeating: seed &+ 1, count: 32), serverKey: Array(repeating: seed &+ 2, count: 32))
    }

    @Test(arguments: Backend.allCases) func createGetUpdateDeleteList(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend, users: [])
        defer { fixture.remove() }
        let storage = fixture.storage

        let before = Date()
        try await storage.createAccount(
            username: "juliet", keys: [Self.keys("SHA-256", seed: 1), Self.keys("SHA-1", seed: 2)])
        try await storage.createAccount(username: "benvolio", keys: [Self.keys("SHA-256", seed: 3)])

        let juliet = try #require(try await storage.account(username: "juliet"))
        #expect(juliet.username == "juliet")
        // Ordered by hash name, bytes exactly as written.
        #expect(juliet.keys == [Self.keys("SHA-1", seed: 2), Self.keys("SHA-256", seed: 1)])
        #expect(juliet.keys(for: "SHA-256") == Self.keys("SHA-256", seed: 1))
        #expect(abs(juliet.createdAt.timeIntervalSince(before)) < 5)
        #expect(try await storage.account(username: "romeo") == nil)
        #expect(try await storage.account(username: "Juliet") == nil, "usernames compare exactly")

        try await storage.updateKeys(username: "juliet", keys: [Self.keys("SHA-256", seed: 9)], origin: .inband)
        #expect(try await storage.account(username: "juliet")?.keys == [Self.keys("SHA-256", seed: 9)])

        #expect(try await storage.usernames() == ["benvolio", "juliet"])
        #expect(try await storage.accountCount() == 2)

        #expect(try await storage.deleteAccount(username: "juliet", origin: .admin))
        #expect(try await storage.account(username: "juliet") == nil)
        #expect(try await storage.deleteAccount(username: "juliet", origin: .admin) == false)
        #expect(try await storage.usernames() == ["benvolio"])
        #expect(try await storage.accountCount() == 1)
    }

    /// The lookup a SASL exchange makes from an event loop (a callback, no task): the same
    /// answer as the `async` one, and no cache between it and the table, so a password change
    /// or a deletion counts from the very next login.
    @Test(arguments: Backend.allCases) func callbackLookupAnswersLikeTheAsyncOneAndSeesChangesAtOnce(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend, users: [])
        defer { fixture.remove() }
        let storage = fixture.storage
        @Sendable func lookup(_ username: String) async throws -> AccountRecord? {
            try await withCheckedThrowingContinuation { continuation in
                storage.account(username: username) { continuation.resume(with: $0) }
            }
        }
        try await storage.createAccount(
            username: "juliet", keys: [Self.keys("SHA-256", seed: 1), Self.keys("SHA-1", seed: 2)])

        let juliet = try #require(try await lookup("juliet"))
        #expect(juliet == (try await storage.account(username: "juliet")))
        #expect(juliet.keys == [Self.keys("SHA-1", seed: 2), Self.keys("SHA-256", seed: 1)])
        #expect(try await lookup("romeo") == nil)
        #expect(try await lookup("Juliet") == nil, "usernames compare exactly")

        try await storage.updateKeys(username: "juliet", keys: [Self.keys("SHA-256", seed: 9)], origin: .admin)
        #expect(try await lookup("juliet")?.keys == [Self.keys("SHA-256", seed: 9)])

        // Many at once (more than the reader connections): each answers, once, with its own.
        try await storage.createAccount(username: "benvolio", keys: [Self.keys("SHA-256", seed: 3)])
        let answers = try await withThrowingTaskGroup(of: (Int, AccountRecord?).self) { group in
            for index in 0..<64 {
                group.addTask { (index, try await lookup(index % 2 == 0 ? "juliet" : "benvolio")) }
            }
            return try await group.reduce(into: [Int: AccountRecord?]()) { $0[$1.0] = $1.1 }
        }
        #expect(answers.count == 64)
        for (index, record) in answers {
            #expect(record?.username == (index % 2 == 0 ? "juliet" : "benvolio"))
        }

        #expect(try await storage.deleteAccount(username: "juliet", origin: .admin))
        #expect(try await lookup("juliet") == nil)
        #expect(try await lookup("benvolio")?.keys == [Self.keys("SHA-256", seed: 3)])
    }

    @Test(arguments: Backend.allCases) func duplicateCreateFailsWithAccountExists(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend, users: [])
        defer { fixture.remove() }
        let storage = fixture.storage
        try await storage.createAccount(username: "juliet", keys: [Self.keys("SHA-256", seed: 1)])

        await #expect(throws: StorageError.accountExists(username: "juliet")) {
            try await storage.createAccount(username: "juliet", keys: [Self.keys("SHA-256", seed: 2)])
        }
        // The failed attempt changed nothing.
        #expect(try await storage.account(username: "juliet")?.keys == [Self.keys("SHA-256", seed: 1)])
    }

    @Test(arguments: Backend.allCases) func updatingAMissingAccountFailsWithAccountNotFound(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend, users: [])
        defer { fixture.remove() }
        let storage = fixture.storage

        await #expect(throws: StorageError.accountNotFound(username: "romeo")) {
            try await storage.updateKeys(username: "romeo", keys: [Self.keys("SHA-256", seed: 1)], origin: .admin)
        }
        #expect(try await storage.changes(after: 0).isEmpty)
    }

    @Test(arguments: Backend.allCases) func refusesKeysItCannotStoreConsistently(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend, users: [])
        defer { fixture.remove() }
        let storage = fixture.storage

        await #expect(throws: StorageError.self) {
            try await storage.createAccount(username: "juliet", keys: [])
        }
        await #expect(throws: StorageError.self) {
            try await storage.createAccount(
                username: "juliet", keys: [Self.keys("SHA-256", seed: 1), Self.keys("SHA-256", seed: 2)])
        }
        #expect(try await storage.accountCount() == 0)
    }
}
