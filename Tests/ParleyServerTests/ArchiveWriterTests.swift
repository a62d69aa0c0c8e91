import Foundation
import Logging
@testable import ParleyServer
import ParleyStorage
import Synchronization
import Testing

/// The archive writer's sequence numbers: what an XEP-0198 acknowledgement may rely on.
@Suite struct ArchiveWriterTests {
    /// Stores in memory; fails every write while `failing` is set.
    final class FlakyStore: ArchiveStore {
        let failing = Mutex(false)
        let attempts = Mutex(0)
        let stored = Mutex<[ArchiveEntry]>([])

        struct DiskFull: Error {}

        func archive(_ entries: [ArchiveEntry], maxPerUser: Int?) async throws {
            attempts.withLock { $0 += 1 }
            if failing.withLock({ $0 }) { throw DiskFull() }
            stored.withLock { $0.append(contentsOf: entries) }
        }

        func queryArchive(user: String, _ query: ArchiveQuery) async throws -> ArchivePage {
            ArchivePage(messages: [], complete: true, count: 0, firstIndex: nil)
        }
        func recentOriginIDs(of user: String, sentAs bareJID: String, limit: Int) async throws -> [SentOriginID] { [] }
        func archivePreferences(of user: String) async throws -> ArchivePreferences { ArchivePreferences() }
        func setArchivePreferences(_ preferences: ArchivePreferences, of user: String) async throws {}
        func pruneArchive(before date: Date) async throws -> Int { 0 }
    }

    private func entry(_ id: String) -> ArchiveEntry {
        ArchiveEntry(
            owner: "bob", with: "alice@localhost", from: "alice@localhost/a", to: "bob@localhost", stanzaID: id, originID: nil,
            stanza: "<message/>", archivedAt: Date())
    }

    @Test func sequencesFollowTheRoutingOrderAndAreCommittedOnlyAfterTheWrite() async throws {
        let store = FlakyStore()
        let writer = ArchiveWriter(store: store, maxPerUser: nil, logger: Logger(label: "test"), retryPauses: [])
        let first = try #require(writer.enqueue([entry("a"), entry("b")]))
        let second = try #require(writer.enqueue([entry("c")]))
        #expect(first == 1...2)
        #expect(second == 3...3)
        await writer.waitUntilWritten(3)
        #expect(writer.outcome(of: 1...3) == .committed)
        #expect(store.stored.withLock { $0.map(\.stanzaID) } == ["a", "b", "c"])
        #expect(writer.outcome(of: 4...4) == .pending)
    }

    @Test func aWriteThatKeepsFailingIsReportedAndLaterWritesGoOn() async throws {
        let store = FlakyStore()
        store.failing.withLock { $0 = true }
        let writer = ArchiveWriter(
            store: store, maxPerUser: nil, logger: Logger(label: "test"), retryPauses: [.milliseconds(1), .milliseconds(1)])
        let lost = try #require(writer.enqueue([entry("a")]))
        await writer.waitUntilWritten(lost.upperBound)
        // Tried once and retried twice, then given up on: never reported as stored.
        #expect(store.attempts.withLock { $0 } == 3)
        #expect(writer.outcome(of: lost) == .failed)
        #expect(writer.committedBatches == 0)

        store.failing.withLock { $0 = false }
        let kept = try #require(writer.enqueue([entry("b")]))
        await writer.flush()
        #expect(writer.outcome(of: kept) == .committed)
        // A span reaching back over the failure is not safe either.
        #expect(writer.outcome(of: lost.lowerBound...kept.upperBound) == .failed)
        #expect(writer.committedBatches == 1)
    }

    /// Entries arriving steadily while the writer commits share transactions: one starts at
    /// most every gathering interval, so a steady stream costs a commit per interval rather
    /// than one per message; and none is lost or reordered by the wait.
    @Test func aSteadyStreamIsCommittedAtMostOncePerGatheringInterval() async throws {
        let store = FlakyStore()
        let interval = Duration.milliseconds(50)
        let writer = ArchiveWriter(store: store, maxPerUser: nil, logger: Logger(label: "test"), retryPauses: [], gatherInterval: interval)
        let started = ContinuousClock.now
        var last: ClosedRange<UInt64>?
        for index in 0..<100 {
            last = writer.enqueue([entry("\(index)")])
            try await Task.sleep(for: .milliseconds(1))
        }
        await writer.waitUntilWritten(try #require(last).upperBound)
        let elapsed = ContinuousClock.now - started
        // The first entry goes at once; every later transaction waits for its interval.
        #expect(writer.committedBatches <= Int(elapsed / interval) + 2)
        #expect(writer.committedBatches < 100)
        #expect(store.stored.withLock { $0.map(\.stanzaID) } == (0..<100).map { "\($0)" })
    }

    /// After a quiet spell the first entry is written at once, not an interval later.
    @Test func aLoneEntryAfterAQuietSpellIsWrittenAtOnce() async throws {
        let store = FlakyStore()
        let interval = Duration.seconds(2)
        let writer = ArchiveWriter(store: store, maxPerUser: nil, logger: Logger(label: "test"), retryPauses: [], gatherInterval: interval)
        let first = try #require(writer.enqueue([entry("first")]))
        await writer.waitUntilWritten(first.upperBound)
        // The writer waits out the interval after a commit, then finds nothing and ends.
        try await Task.sleep(for: interval + .milliseconds(500))
        let quietStart = ContinuousClock.now
        let alone = try #require(writer.enqueue([entry("alone")]))
        await writer.waitUntilWritten(alone.upperBound)
        #expect(ContinuousClock.now - quietStart < interval)
    }
}
