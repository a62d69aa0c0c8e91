import Foundation
import ParleyStorage
import Testing

/// Batches larger than one statement takes (PostgreSQL writes a group commit's rows with
/// multi-row INSERTs of at most 2,000 rows): order, ids, quotas and retractions must come out
/// as if every row had been written on its own.
@Suite struct BatchWriteTests {
    @Test(arguments: Backend.allCases) func aLargeArchiveBatchKeepsItsOrderAndARetractionOfItsOwnRows(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage
        let count = 2_500
        var batch: [ArchiveEntry] = []
        for index in 1...count {
            // Every third without an origin-id: NULLs among the rows of one statement.
            batch += ArchiveStoreTests.entries("m\(index)", at: Double(index), origin: index % 3 == 0 ? nil : "o\(index)")
        }
        // Retracts a row of the same batch, written before it in the same transaction.
        batch += ArchiveStoreTests.entries("r1", at: Double(count + 1), retracts: "o7")
        try await storage.archive(batch, maxPerUser: nil)

        for user in ["juliet", "romeo"] {
            let page = try await storage.queryArchive(user: user, ArchiveQuery(max: count + 10))
            #expect(page.messages.map(\.stanzaID) == (1...count).map { "m\($0)" } + ["r1"])
            #expect(page.messages.map(\.position) == page.messages.map(\.position).sorted())
            #expect(page.messages[6].stanza == nil && page.messages[6].retractedAt != nil, "m7 is tombstoned")
            #expect(page.messages[5].originID == nil && page.messages[4].originID == "o5")
            #expect(page.messages.filter { $0.stanza == nil }.count == 1)
        }
    }

    @Test(arguments: Backend.allCases) func aLargeArchiveBatchIsCutBackPerAccount(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        var batch: [ArchiveEntry] = []
        for index in 1...2_100 { batch += ArchiveStoreTests.entries("m\(index)", at: Double(index)) }
        try await fixture.storage.archive(batch, maxPerUser: 5)
        for user in ["juliet", "romeo"] {
            let page = try await fixture.storage.queryArchive(user: user, ArchiveQuery(max: 100))
            #expect(page.messages.map(\.stanzaID) == (2_096...2_100).map { "m\($0)" })
        }
    }

    @Test(arguments: Backend.allCases) func aLargeOfflineBatchKeepsOrderQuotaAndUnknownUsers(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage
        let quota = 1_400  // juliet: 1,200 fit, then 200 of the next 400
        var requests: [OfflineStoreRequest] = []
        for n in 0..<2_400 {
            requests.append(OfflineStoreRequest(user: n % 2 == 0 ? "juliet" : "romeo", stanza: "<message n='\(n)'/>", quota: quota))
        }
        requests += (0..<400).map { OfflineStoreRequest(user: "juliet", stanza: "<message x='\($0)'/>", quota: quota) }
        requests.append(OfflineStoreRequest(user: "mercutio", stanza: "<message/>", quota: quota))
        let results = await storage.storeOffline(requests)

        let ids = results.compactMap { try? $0.get() }
        #expect(ids.count == 1_200 + 1_200 + 200)
        #expect(ids == ids.sorted() && Set(ids).count == ids.count, "ids increase along the batch")
        let refused = results.filter {
            if case .failure(let error) = $0 { return (error as? StorageError) == .quotaExceeded(limit: quota) }
            return false
        }
        #expect(refused.count == 200)
        if case .failure(let error) = results.last! {
            #expect((error as? StorageError) == .accountNotFound(username: "mercutio"))
        } else {
            Issue.record("a message for an unknown account was stored")
        }
        let stored = try await storage.offlineMessages(for: "juliet", limit: 10_000)
        #expect(stored.count == quota)
        #expect(stored.prefix(3).map(\.stanza) == ["<message n='0'/>", "<message n='2'/>", "<message n='4'/>"])
        #expect(stored.last?.stanza == "<message x='199'/>")
    }
}
