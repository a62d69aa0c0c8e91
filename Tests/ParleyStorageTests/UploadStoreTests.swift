import Foundation
import Testing

@testable import ParleyStorage

/// XEP-0363 upload metadata (migration v11_uploads): slot states, usage for quotas, and rows
/// going with their account.
@Suite struct UploadStoreTests {
    static func record(_ id: String, owner: String = "juliet", size: Int64 = 10, at date: Date = Date()) -> UploadRecord {
        UploadRecord(id: id, owner: owner, filename: "\(id).png", size: size, contentType: "image/png", createdAt: date)
    }

    @Test(arguments: Backend.allCases) func slotsMoveThroughTheirStatesOnce(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage
        let inserted = try await storage.insertUpload(Self.record("a"))
        #expect(inserted.accountID > 0)
        #expect(try await storage.upload(id: "a")?.state == .pending)
        #expect(try await storage.transitionUpload(id: "a", from: .pending, to: .uploading))
        // A second PUT of the same slot finds it taken.
        #expect(try await !storage.transitionUpload(id: "a", from: .pending, to: .uploading))
        #expect(try await storage.transitionUpload(id: "a", from: .uploading, to: .stored))
        // Stored to the millisecond.
        let stored = try #require(try await storage.upload(id: "a"))
        #expect(stored.with(createdAt: inserted.createdAt) == inserted.with(state: .stored))
        #expect(abs(stored.createdAt.timeIntervalSince(inserted.createdAt)) < 0.001)
        await #expect(throws: StorageError.accountNotFound(username: "nobody")) {
            try await storage.insertUpload(Self.record("b", owner: "nobody"))
        }
    }

    /// A PUT records its upload with the checks that make the slot single use and keep the
    /// quotas, in one transaction.
    @Test(arguments: Backend.allCases) func aClaimIsSingleUseAndKeepsTheQuotas(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage
        let hourAgo = Date().addingTimeInterval(-3600)
        let claimed = try await storage.claimUpload(Self.record("a", size: 600, at: hourAgo), dailyQuota: 1000, totalQuota: 1500)
        guard case .claimed(let record) = claimed else { Issue.record("not claimed: \(claimed)"); return }
        #expect(record.accountID > 0 && record.state == .uploading)
        #expect(try await storage.upload(id: "a")?.state == .uploading)
        #expect(try await storage.claimUpload(Self.record("a", size: 600), dailyQuota: 0, totalQuota: 0) == .alreadyUsed)
        // 600 in the last 24 hours (uploading counts): 500 more pass the daily quota.
        let over = try await storage.claimUpload(Self.record("b", size: 500), dailyQuota: 1000, totalQuota: 0)
        guard case .overDailyQuota(let oldest) = over else { Issue.record("not refused: \(over)"); return }
        #expect(abs(oldest.timeIntervalSince(hourAgo)) < 0.001)
        // 600 uploading or stored: 1000 more pass the total quota.
        #expect(try await storage.claimUpload(Self.record("b", size: 1000), dailyQuota: 0, totalQuota: 1500) == .overTotalQuota)
        #expect(try await storage.claimUpload(Self.record("b", size: 400), dailyQuota: 1000, totalQuota: 1500).isClaimed)
        #expect(try await storage.uploads(of: "juliet").map(\.id) == ["a", "b"])
        // Another account's quota is its own; an account that does not exist gets none.
        #expect(try await storage.claimUpload(Self.record("c", owner: "romeo", size: 1000), dailyQuota: 1000, totalQuota: 1000).isClaimed)
        await #expect(throws: StorageError.accountNotFound(username: "nobody")) {
            try await storage.claimUpload(Self.record("d", owner: "nobody"), dailyQuota: 0, totalQuota: 0)
        }
        await #expect(throws: StorageError.accountNotFound(username: "nobody")) {
            try await storage.uploadUsage(of: "nobody", since: Date())
        }
    }

    /// Claims racing each other: one slot is claimed once, and an account's claims together
    /// stay within its quota (PostgreSQL runs them on connections of their own).
    @Test(arguments: Backend.allCases) func racingClaimsKeepTheQuotaAndTheSingleUse(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage
        let claims = try await withThrowingTaskGroup(of: UploadClaim.self) { group in
            for index in 0..<10 {
                group.addTask { try await storage.claimUpload(Self.record("q\(index)", size: 300), dailyQuota: 1000, totalQuota: 0) }
                group.addTask { try await storage.claimUpload(Self.record("same", owner: "romeo"), dailyQuota: 0, totalQuota: 0) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let juliets = try await storage.uploads(of: "juliet")
        #expect(juliets.count == 3 && juliets.map(\.size).reduce(0, +) == 900)
        #expect(try await storage.uploads(of: "romeo").map(\.id) == ["same"])
        #expect(claims.filter(\.isClaimed).count == 4)
        #expect(claims.filter { $0 == .alreadyUsed }.count == 9)
    }

    @Test(arguments: Backend.allCases) func usageCountsRecentSlotsAndStoredBytes(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage
        let old = Date().addingTimeInterval(-2 * 86_400)
        _ = try await storage.insertUpload(Self.record("old", size: 100, at: old))
        _ = try await storage.transitionUpload(id: "old", from: .pending, to: .stored)
        _ = try await storage.insertUpload(Self.record("new", size: 7))
        _ = try await storage.insertUpload(Self.record("romeos", owner: "romeo", size: 1000))
        let usage = try await storage.uploadUsage(of: "juliet", since: Date().addingTimeInterval(-86_400))
        #expect(usage.recent == 7)
        #expect(usage.stored == 100)
        #expect(try await storage.uploads(createdBefore: Date().addingTimeInterval(-86_400), limit: 10).map(\.id) == ["old"])
        #expect(try await storage.deleteUploads(ids: ["old", "missing"]).map(\.id) == ["old"])
        #expect(try await storage.uploads(of: "juliet").map(\.id) == ["new"])
    }

    @Test(arguments: Backend.allCases) func uploadsGoWithTheirAccount(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage
        _ = try await storage.insertUpload(Self.record("a"))
        _ = try await storage.insertUpload(Self.record("b", owner: "romeo"))
        #expect(try await storage.deleteAccount(username: "juliet", origin: .admin))
        #expect(try await storage.upload(id: "a") == nil)
        #expect(try await storage.upload(id: "b") != nil)
    }
}

extension UploadClaim {
    var isClaimed: Bool {
        if case .claimed = self { return true }
        return false
    }
}

extension UploadRecord {
    func with(state: State) -> UploadRecord {
        var copy = self
        copy.state = state
        return copy
    }

    func with(createdAt: Date) -> UploadRecord {
        var copy = self
        copy.createdAt = createdAt
        return copy
    }
}
