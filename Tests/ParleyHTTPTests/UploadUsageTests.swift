import Foundation
import NIOConcurrencyHelpers
import ParleyCore
import ParleyServer
import ParleyStorage
import Testing

@testable import ParleyHTTP

/// The quota checks of slot requests read an account's usage from storage once a minute, not
/// per slot request (summing thousands of rows each time capped the slot rate), count the slots
/// not used yet in memory until their URLs expire, and still hold in between.
@Suite("XEP-0363 quota usage")
struct UploadUsageTests {
    @Test func usageIsReadOncePerLifetimeAndQuotasStillHold() async throws {
        let directory = NSTemporaryDirectory() + "parley-usage-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let storage = try SQLiteStorage(path: "\(directory)/parley.sqlite")
        try await storage.createAccount(username: "alice", keys: try AccountKeys.derive(password: "secret", iterations: 4096))
        let metadata = CountingMetadata(storage)
        var configuration = HTTPConfiguration.Upload()
        configuration.dailyQuota = 50 * 100
        let clock = NIOLockedValueBox(Date())
        let slots = UploadSlots(
            configuration: configuration, baseURL: "https://example.test", secret: Array("k".utf8), metadata: metadata,
            now: { clock.withLockedValue { $0 } })

        for index in 0..<50 {
            _ = try await slots.makeSlot(account: "alice", filename: "f\(index).bin", size: 100, contentType: nil)
        }
        #expect(metadata.usageReads.withLockedValue { $0 } == 1)
        // The 50 slots issued since the read count: the daily quota is reached.
        await #expect(throws: UploadSlotError.self) {
            try await slots.makeSlot(account: "alice", filename: "over.bin", size: 1, contentType: nil)
        }
        #expect(metadata.usageReads.withLockedValue { $0 } == 1)

        // A minute on, the usage is read again (and still says the quota is reached).
        clock.withLockedValue { $0 = $0.addingTimeInterval(61) }
        await #expect(throws: UploadSlotError.self) {
            try await slots.makeSlot(account: "alice", filename: "over.bin", size: 1, contentType: nil)
        }
        #expect(metadata.usageReads.withLockedValue { $0 } == 2)

        // The slots were never used: once their URLs expire (300 s), they no longer count.
        clock.withLockedValue { $0 = $0.addingTimeInterval(300) }
        _ = try await slots.makeSlot(account: "alice", filename: "later.bin", size: 4_000, contentType: nil)
        #expect(metadata.usageReads.withLockedValue { $0 } == 3)
    }

    @Test func slotsAndStoredFilesCountAtOnceForTheQuotas() async throws {
        let usage = UploadUsage(lifetime: 60)
        let now = Date()
        let expires = Int64(now.timeIntervalSince1970) + 300
        let first = try await usage.usage(of: "alice", now: now) { (recent: 10, stored: 20) }
        #expect(first.recent == 10 && first.stored == 20)
        // An account not read yet has nothing to reserve from.
        #expect(usage.reserve(5, for: "bob", expires: expires, now: now, dailyQuota: 0, totalQuota: 0) == nil)
        #expect(usage.reserve(5, for: "alice", expires: expires, now: now, dailyQuota: 0, totalQuota: 0) == .reserved)
        let withSlot = try await usage.usage(of: "alice", now: now) { Issue.record("read again"); return (0, 0) }
        #expect(withSlot.recent == 15 && withSlot.stored == 20)
        // The slot's file stored: its bytes are a recent upload's now, and stored ones.
        usage.fileStored(by: "alice", size: 5, slotExpires: expires)
        usage.fileStored(by: "bob", size: 1000, slotExpires: expires)
        let cached = try await usage.usage(of: "alice", now: now.addingTimeInterval(30)) { Issue.record("read again"); return (0, 0) }
        #expect(cached.recent == 15 && cached.stored == 25)
        let later = now.addingTimeInterval(30)
        #expect(usage.reserve(6, for: "alice", expires: expires, now: later, dailyQuota: 20, totalQuota: 0) == .overDailyQuota)
        #expect(usage.reserve(6, for: "alice", expires: expires, now: later, dailyQuota: 0, totalQuota: 30) == .overTotalQuota)
        #expect(usage.reserve(5, for: "alice", expires: expires, now: later, dailyQuota: 20, totalQuota: 30) == .reserved)
        let bob = try await usage.usage(of: "bob", now: now) { (recent: 0, stored: 1) }
        #expect(bob.recent == 0 && bob.stored == 1)
    }
}

/// The real store, counting the usage reads.
private final class CountingMetadata: UploadMetadataStore {
    let base: SQLiteStorage
    let usageReads = NIOLockedValueBox(0)

    init(_ base: SQLiteStorage) { self.base = base }

    func insertUpload(_ record: UploadRecord) async throws -> UploadRecord { try await base.insertUpload(record) }
    func claimUpload(_ record: UploadRecord, dailyQuota: Int64, totalQuota: Int64) async throws -> UploadClaim {
        try await base.claimUpload(record, dailyQuota: dailyQuota, totalQuota: totalQuota)
    }
    func upload(id: String) async throws -> UploadRecord? { try await base.upload(id: id) }
    func uploadUsage(of owner: String, since date: Date) async throws -> (recent: Int64, stored: Int64) {
        usageReads.withLockedValue { $0 += 1 }
        return try await base.uploadUsage(of: owner, since: date)
    }
    func transitionUpload(id: String, from: UploadRecord.State, to: UploadRecord.State) async throws -> Bool {
        try await base.transitionUpload(id: id, from: from, to: to)
    }
    func uploads(of owner: String) async throws -> [UploadRecord] { try await base.uploads(of: owner) }
    func deleteUploads(ids: [String]) async throws -> [UploadRecord] { try await base.deleteUploads(ids: ids) }
    func uploads(createdBefore date: Date, limit: Int) async throws -> [UploadRecord] {
        try await base.uploads(createdBefore: date, limit: limit)
    }
}
