import Foundation
import Testing

@testable import ParleyStorage

/// Roster transactions from many users at once share SQLite transactions (group commit), and
/// each still behaves as a transaction of its own.
@Suite struct SQLiteRosterGroupCommitTests {
    struct Refused: Error {}

    @Test func concurrentChangesShareCommitsAndAThrowTakesBackOnlyItsOwn() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let users = (0..<8).map { "user\($0)" }
        let storage = try await SQLiteStorage.withAccounts(users, in: directory)
        let perUser = 30

        let refusals = try await withThrowingTaskGroup(of: Int.self) { group in
            for user in users {
                group.addTask {
                    var refused = 0
                    for n in 0..<perUser {
                        do {
                            try await storage.modifyRoster(of: user) { roster in
                                try roster.setItem(RosterItem(contact: "c\(n)@example.net"))
                                try roster.setPending(
                                    PendingSubscription(contact: "p\(n)@example.net", stanza: "<presence/>", receivedAt: Date()))
                                if n % 3 == 2 { throw Refused() }
                            }
                        } catch is Refused {
                            refused += 1
                        }
                    }
                    return refused
                }
            }
            return try await group.reduce(0, +)
        }
        let total = users.count * perUser
        #expect(refusals == total / 3)
        let batches = storage.groupedWrites.batchCount
        // Shared commits: how many depends on scheduling, so only that they were shared.
        #expect(batches * 2 <= total, "\(batches) transactions for \(total) roster changes")

        let kept = (0..<perUser).filter { $0 % 3 != 2 }
        for user in users {
            let (items, version) = try await storage.roster(of: user)
            // One bump per committed change, in the order they were made; nothing of a refused one.
            #expect(version == Int64(kept.count))
            let versions = Dictionary(uniqueKeysWithValues: items.map { ($0.contact, $0.version) })
            #expect(Set(versions.keys) == Set(kept.map { "c\($0)@example.net" }))
            #expect(kept.map { versions["c\($0)@example.net"] } == (1...kept.count).map { Int64($0) })
            let pending = try await storage.pendingSubscriptions(of: user).map(\.contact)
            #expect(Set(pending) == Set(kept.map { "p\($0)@example.net" }))
        }
        await #expect(throws: StorageError.accountNotFound(username: "nobody")) {
            try await storage.modifyRoster(of: "nobody") { _ in }
        }
    }
}
