import Foundation
import ParleyStorage
import Testing

/// Two `SQLiteStorage` instances on one file stand in for the server and an admin command
/// running in another process.
@Suite struct SQLiteAccountChangeFeedTests {
    static let keys = [SQLiteAccountStoreTests.keys("SHA-256", seed: 7)]

    @Test func changesFromAnotherInstanceArriveInCommitOrder() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("parley.sqlite")
        let server = try SQLiteStorage(path: path)
        let admin = try SQLiteStorage(path: path)

        try await server.createAccount(username: "juliet", keys: Self.keys)
        try await server.createAccount(username: "romeo", keys: Self.keys)
        let cursor = try await server.latestChangeID()
        #expect(cursor == 0, "creating an account is not a change the server reacts to")

        try await admin.updateKeys(username: "romeo", keys: Self.keys, origin: .admin)
        try await server.updateKeys(username: "juliet", keys: Self.keys, origin: .inband)
        try await admin.deleteAccount(username: "romeo", origin: .admin)
        try await admin.deleteAccount(username: "nobody", origin: .admin)

        let changes = try await server.changes(after: cursor)
        #expect(changes.map(\.username) == ["romeo", "juliet", "romeo"])
        #expect(changes.map(\.kind) == [.passwordChanged, .passwordChanged, .deleted])
        #expect(changes.map(\.origin) == [.admin, .inband, .admin])
        #expect(changes.map(\.id) == changes.map(\.id).sorted() && Set(changes.map(\.id)).count == 3)
        #expect(try await server.latestChangeID() == changes.last?.id)
        #expect(try await server.changes(after: changes[1].id).map(\.kind) == [.deleted])
        #expect(try await server.changes(after: changes[2].id).isEmpty)
    }

    @Test func pruningKeepsTheLatestIDSoCursorsStayValid() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let storage = try SQLiteStorage(path: directory.file("parley.sqlite"))
        for name in ["a", "b", "c"] {
            try await storage.createAccount(username: name, keys: Self.keys)
            try await storage.deleteAccount(username: name, origin: .inband)
        }
        let latest = try await storage.latestChangeID()
        #expect(try await storage.pruneChanges(before: Date().addingTimeInterval(-3600)) == 0)
        #expect(try await storage.pruneChanges(before: Date().addingTimeInterval(1)) == 3)
        #expect(try await storage.changes(after: 0).isEmpty)
        #expect(try await storage.latestChangeID() == latest)

        try await storage.createAccount(username: "d", keys: Self.keys)
        try await storage.deleteAccount(username: "d", origin: .admin)
        #expect(try await storage.changes(after: latest).map(\.username) == ["d"])
    }

    @Test func concurrentWritersFromTwoInstancesWaitInsteadOfFailingBusy() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("parley.sqlite")
        let first = try SQLiteStorage(path: path)
        let second = try SQLiteStorage(path: path)

        let perWriter = 40
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, storage) in [first, second].enumerated() {
                for n in 0..<perWriter {
                    group.addTask {
                        let name = "user\(index)-\(n)"
                        try await storage.createAccount(username: name, keys: Self.keys)
                        try await storage.updateKeys(username: name, keys: Self.keys, origin: .admin)
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await first.accountCount() == 2 * perWriter)
        #expect(try await second.changes(after: 0).count == 2 * perWriter)
    }

    @Test func twoInstancesCanOpenAFreshFileAtOnce() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("fresh/parley.sqlite")
        // Both race to create the file and run the migrations.
        async let a = Task.detached { try SQLiteStorage(path: path) }.value
        async let b = Task.detached { try SQLiteStorage(path: path) }.value
        let (first, second) = try await (a, b)
        try await first.createAccount(username: "juliet", keys: Self.keys)
        #expect(try await second.usernames() == ["juliet"])
    }
}
