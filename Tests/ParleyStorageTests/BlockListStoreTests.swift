import Foundation
import ParleyStorage
import Testing

@Suite struct BlockListStoreTests {
    @Test(arguments: Backend.allCases) func blockUnblockAndUnblockAll(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage
        #expect(try await storage.blockList(of: "juliet").isEmpty)

        try await storage.block(user: "juliet", jids: ["tybalt@example.net", "example.org", "paris@example.net/court"])
        try await storage.block(user: "juliet", jids: ["tybalt@example.net", "Apothecary@example.net"])
        // Sorted by bytes; a repeat is kept once.
        #expect(
            try await storage.blockList(of: "juliet") == [
                "Apothecary@example.net", "example.org", "paris@example.net/court", "tybalt@example.net",
            ])
        #expect(try await storage.blockList(of: "romeo").isEmpty)

        try await storage.unblock(user: "juliet", jids: ["example.org", "nobody@example.net"])
        #expect(
            try await storage.blockList(of: "juliet") == [
                "Apothecary@example.net", "paris@example.net/court", "tybalt@example.net",
            ])

        try await storage.block(user: "romeo", jids: ["tybalt@example.net"])
        try await storage.unblock(user: "juliet", jids: [])
        #expect(try await storage.blockList(of: "juliet").isEmpty)
        #expect(try await storage.blockList(of: "romeo") == ["tybalt@example.net"], "only juliet's list was cleared")
    }

    @Test(arguments: Backend.allCases) func allListsAtOnce(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend, users: ["juliet", "romeo", "mercutio"])
        defer { fixture.remove() }
        let storage = fixture.storage
        #expect(try await storage.allBlockLists().isEmpty)
        try await storage.block(user: "juliet", jids: ["tybalt@example.net", "Apothecary@example.net"])
        try await storage.block(user: "romeo", jids: ["paris@example.net"])
        try await storage.block(user: "mercutio", jids: ["tybalt@example.net"])
        try await storage.unblock(user: "mercutio", jids: [])
        // Empty lists are left out; each list is sorted by bytes, like blockList(of:).
        #expect(
            try await storage.allBlockLists() == [
                "juliet": ["Apothecary@example.net", "tybalt@example.net"],
                "romeo": ["paris@example.net"],
            ])
    }

    @Test(arguments: Backend.allCases) func unknownUsers(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage
        await #expect(throws: StorageError.accountNotFound(username: "mercutio")) {
            try await storage.block(user: "mercutio", jids: ["tybalt@example.net"])
        }
        await #expect(throws: StorageError.accountNotFound(username: "mercutio")) {
            try await storage.unblock(user: "mercutio", jids: [])
        }
        #expect(try await storage.blockList(of: "mercutio").isEmpty)
    }
}
