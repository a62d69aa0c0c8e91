import Foundation
import Logging
import ParleyTestSupport
import Testing

@testable import ParleyPostgres
@testable import ParleyStorage

/// The cut to `max_messages_per_user` on PostgreSQL, spread over the large transactions after
/// the one that asked for it (`ArchiveTrimBacklog`): a few accounts per transaction, each once,
/// and all of them within `spread` transactions; a small transaction cuts what it asked for.
@Suite struct PostgresArchiveTrimTests {
    static let logger = Logger(label: "parley.tests.postgres", factory: { _ in SwiftLogNoOpLogHandler() })

    @Test func theBacklogCutsAFewAccountsPerLargeTransactionAndAllWithinTheSpread() {
        let backlog = ArchiveTrimBacklog()
        let large = ArchiveTrimBacklog.largeBatch
        #expect(backlog.due(entries: large, asked: [], keeping: nil) == nil)
        // Asked by a large transaction: four of them now, the rest in the large ones after it.
        var due = backlog.due(entries: large, asked: Set(1...100), keeping: 10)
        var transactions = 0
        var cut: [Int64] = []
        while let next = due {
            #expect(next.keeping == 10 && next.accounts.count == min(4, 100 - cut.count))
            // A small transaction asking for nothing cuts nothing meanwhile.
            #expect(backlog.due(entries: 1, asked: [], keeping: nil) == nil)
            backlog.done(next)
            cut += next.accounts.sorted()
            transactions += 1
            due = backlog.due(entries: large, asked: [], keeping: nil)
        }
        #expect(transactions == 25 && cut == Array(1...100), "oldest first, each once")
        // A small transaction cuts what it asked for, at once, as before.
        let small = backlog.due(entries: 2, asked: [7, 8], keeping: 10)
        #expect(small == ArchiveTrimBacklog.Cut(accounts: [7, 8], keeping: 10))
        // Until it commits they wait: a large one takes them first.
        #expect(backlog.due(entries: large, asked: [], keeping: nil)?.accounts == [7, 8])
        backlog.done(small!)
        #expect(backlog.due(entries: large, asked: [], keeping: nil) == nil)
        // A long backlog goes faster: at least 1/32 of it per transaction; touched again while
        // waiting, an account is cut once.
        _ = backlog.due(entries: 1, asked: Set(1...640), keeping: nil)
        #expect(backlog.due(entries: large, asked: Set(1...640), keeping: 10)?.accounts == Set(1...20))
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
            for number in 1...13 { batch += message("\(sender)-\(number)", from: sender, at: Double(index * 100 + number)) }
        }
        func busy(_ name: String, at seconds: Double) -> [ArchiveEntry] {
            (1...130).flatMap { message("\(name)-\($0)", from: "a0", at: seconds + Double($0) / 1000) }
        }
        // A large transaction (260 entries) asks for eleven accounts cut to one entry: the first
        // four (oldest accounts) are cut in it...
        try await storage.archive(batch, maxPerUser: 1)
        #expect(try await held() == [1, 1, 1, 1, 13, 13, 13, 13, 13, 13, 130])
        // ...four more in the next large one, whatever it writes; a small one cuts nothing it did
        // not ask for; the last three go with the next large one.
        try await storage.archive(busy("x", at: 2000), maxPerUser: nil)
        #expect(try await held() == [131, 1, 1, 1, 1, 1, 1, 1, 13, 13, 260])
        try await storage.archive(message("y", from: "a0", at: 3000), maxPerUser: nil)
        #expect(try await held() == [132, 1, 1, 1, 1, 1, 1, 1, 13, 13, 261])
        try await storage.archive(busy("z", at: 4000), maxPerUser: nil)
        #expect(try await held() == [262, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1])
        #expect(try await storage.queryArchive(user: "hub", ArchiveQuery()).messages.map(\.stanzaID) == ["z-130"])
    }
}
