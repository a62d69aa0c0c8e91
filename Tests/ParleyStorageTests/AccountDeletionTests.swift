import Foundation
import GRDB
import Testing

@testable import ParleyStorage

/// Deleting an account removes everything it owns; rows naming it as a contact in other users'
/// rosters stay (RFC 6121: they are those users' data).
@Suite struct AccountDeletionTests {
    static let ownedTables = ["roster_versions", "roster_items", "roster_tombstones", "roster_pending", "offline_messages", "blocked_jids"]

    static func rowCounts(_ fixture: StorageFixture) async throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for table in ownedTables {
            counts[table] = try await fixture.rowCount(table)
        }
        return counts
    }

    @Test(arguments: Backend.allCases) func deletingAnAccountRemovesWhatItOwns(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage
        try await storage.modifyRoster(of: "juliet") { roster in
            try roster.setItem(RosterItem(contact: "romeo@example.com", subscription: .both))
            try roster.setItem(RosterItem(contact: "tybalt@example.com"))
        }
        try await storage.modifyRoster(of: "juliet") { roster in
            try roster.removeItem("tybalt@example.com")
            try roster.setPending(PendingSubscription(contact: "paris@example.com", stanza: "<presence/>", receivedAt: Date()))
        }
        _ = try await storage.storeOffline(user: "juliet", stanza: "<message/>", quota: 10)
        try await storage.block(user: "juliet", jids: ["tybalt@example.com"])
        try await storage.modifyRoster(of: "romeo") { roster in
            try roster.setItem(RosterItem(contact: "juliet@example.com", subscription: .both))
        }
        #expect(
            try await Self.rowCounts(fixture) == [
                "roster_versions": 2, "roster_items": 2, "roster_tombstones": 1, "roster_pending": 1,
                "offline_messages": 1, "blocked_jids": 1,
            ])

        #expect(try await storage.deleteAccount(username: "juliet", origin: .admin))
        #expect(
            try await Self.rowCounts(fixture) == [
                "roster_versions": 1, "roster_items": 1, "roster_tombstones": 0, "roster_pending": 0,
                "offline_messages": 0, "blocked_jids": 0,
            ])
        #expect(try await storage.roster(of: "romeo").items.map(\.contact) == ["juliet@example.com"])

        // A new account of the same name starts empty.
        try await storage.createAccount(username: "juliet", keys: [StorageFixture.keys("SHA-256", seed: 2)])
        #expect(try await storage.roster(of: "juliet") == ([], 0))
        #expect(try await storage.rosterChanges(of: "juliet", since: 2) == nil)
        #expect(try await storage.offlineCount(for: "juliet") == 0)
        #expect(try await storage.blockList(of: "juliet").isEmpty)
    }
}
