import Foundation
import ParleyStorage
import Testing

/// Two stores on one file or database stand in for the server and an admin command running
/// in another process.
@Suite struct AccountChangeFeedTests {
    static let keys = [StorageFixture.keys("SHA-256", seed: 7)]

    @Test(arguments: Backend.allCases) func changesFromAnotherInstanceArriveInCommitOrder(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend, users: [])
        defer { fixture.remove() }
        let server = fixture.storage
        let admin = try await fixture.reopen()

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

    @Test(arguments: Backend.allCases) func pruningKeepsTheLatestIDSoCursorsStayValid(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend, users: [])
        defer { fixture.remove() }
        let storage = fixture.storage
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

    @Test(arguments: Backend.allCases) func concurrentWritersFromTwoInstancesWaitInsteadOfFailingBusy(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend, users: [])
        defer { fixture.remove() }
        let first = fixture.storage
        let second = try await fixture.reopen()

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
        let changes = try await second.changes(after: 0)
        #expect(changes.count == 2 * perWriter)
        #expect(changes.map(\.id) == changes.map(\.id).sorted())
    }

    /// Two writers of the feed at once: a reader polling meanwhile never sees a later id
    /// before an earlier one has committed (on PostgreSQL the writers take the feed's lock).
    @Test(arguments: Backend.allCases) func aPollingReaderNeverSkipsAChange(_ backend: Backend) async throws {
        let users = (0..<30).map { "user\($0)" }
        let fixture = try await StorageFixture(backend, users: users)
        defer { fixture.remove() }
        let writer = fixture.storage
        let other = try await fixture.reopen()
        let reader = try await fixture.reopen()
        let polling = Task {
            var cursor: Int64 = 0
            var seen: [String] = []
            while seen.count < users.count {
                for change in try await reader.changes(after: cursor) {
                    seen.append(change.username)
                    cursor = change.id
                }
                await Task.yield()
            }
            return seen
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, user) in users.enumerated() {
                group.addTask {
                    try await (index.isMultiple(of: 2) ? writer : other).updateKeys(
                        username: user, keys: Self.keys, origin: .admin)
                }
            }
            try await group.waitForAll()
        }
        let seen = try await polling.value
        #expect(Set(seen) == Set(users), "every change once, none skipped")
        #expect(seen.count == users.count)
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
