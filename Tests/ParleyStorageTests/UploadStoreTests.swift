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
