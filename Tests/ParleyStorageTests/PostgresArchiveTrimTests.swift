import Foundation
import Logging
import ParleyTestSupport
import Testing

@testable import ParleyPostgres
@testable import ParleyStorage

/// The cut to `max_messages_per_user` on PostgreSQL, spread over the transactions after the
/// one that asked for it (`ArchiveTrimBacklog`): a few accounts per transaction, each once,
/// and all of them within `spread` transactions.
@Suite struct PostgresArchiveTrimTests {
    static let logger = Logger(label: "parley.tests.postgres", factory: { _ in SwiftLogNoOpLogHandler() })

    @Test func theBacklogCutsAFewAccountsPerTransactionAndAllWithinTheSpread() {
        let backlog = ArchiveTrimBacklog()
        #expect(backlog.due() == nil)
        backlog.add(Set(1...100), keeping: 10)
        var transactions = 0
        var cut: [Int64] = []
        while let due = backlog.due() {
            #expect(due.keeping == 10 && due.accounts.count == min(4, 100 - cut.count))
            // Touched again while waiting (or being cut): still cut once.
            backlog.add(Set(due.accounts.prefix(1)).union([100]), keeping: 10)
            backlog.done(due)
            cut += due.accounts.sorted()
            transactions += 1
        }
        #expect(transactions == 25 && cut == Array(1...100), "oldest first, each once")
        // A long backlog goes faster: at least 1/32 of it per transaction.
        backlog.add(Set(1...640), keeping: 10)
        #expect(backlog.due()?.accounts == Set(1...20))
        // A transaction that did not commit leaves its accounts waiting.
        #expect(backlog.due()?.accounts == Set(1...20))
    }

    @Test func theAccountsOfABatchAreCutOverTheTransactionsThatFollow() async throws {
        let storage = try await PostgresStorage.open(
            url: try await PostgresCluster.shared().createDatabase(), options: .init(maximumConnections: 2), logger: Self.logger)
        defer { Task { await storage.close() } }
        let senders = (0..<10).map { "a\($0)" }
        for user in senders + ["hub"] {
            try await storage.createAccount(username: user, keys: [StorageFixture.keys("SHA-256", seed: 1)])
        }
        func message(_ id: String, from sender: String, at seconds: Double) -> [ArchiveEntry] {
            let stanza = "<message xmlns='jabber:client' type='chat' id='\(id)'><body>\(id)</body></message>"
            return [(sender, "hub@example.net"), ("hub", "\(sender)@example.net")].map { owner, with in
                ArchiveEntry(
                    owner: owner, with: with, from: "\(sender)@example.net/phone", to: "hub@example.net", stanzaID: id,
                    originID: nil, stanza: stanza, archivedAt: Date(timeIntervalSince1970: seconds))
            }
        }
        func held() async throws -> [Int] {
            var counts: [Int] = []
            for user in senders + ["hub"] { counts.append(try await storage.queryArchive(user: user, ArchiveQuery()).count) }
            return counts
        }
        var batch: [ArchiveEntry] = []
        for (index, sender) in senders.enumerated() {
            batch += message("\(sender)-1", from: sender, at: Double(index)) + message("\(sender)-2", from: sender, at: Double(index) + 0.5)
        }
        // Eleven accounts to cut to one entry: the first four (oldest accounts) in this transaction...
        try await storage.archive(batch, maxPerUser: 1)
        #expect(try await held() == [1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 20])
        // ...four more in the next one, whatever it writes, and the last three after that.
        try await storage.archive(message("x1", from: "a0", at: 100), maxPerUser: nil)
        #expect(try await held() == [2, 1, 1, 1, 1, 1, 1, 1, 2, 2, 21])
        try await storage.archive(message("x2", from: "a0", at: 101), maxPerUser: nil)
        #expect(try await held() == [3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1])
        #expect(try await storage.queryArchive(user: "hub", ArchiveQuery()).messages.map(\.stanzaID) == ["x2"])
    }
}
