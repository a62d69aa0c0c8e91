import Foundation
import ParleyStorage
import Testing

@Suite struct SQLiteFileTests {
    @Test func theFileLivesWhereConfiguredOwnerOnlyAndInWALMode() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // Directories that do not exist yet are created.
        let path = directory.file("data/nested/parley.sqlite")
        let storage = try SQLiteStorage(path: path)
        try await storage.createAccount(username: "juliet", keys: [StorageFixture.keys("SHA-256", seed: 1)])

        #expect(storage.path == path)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        // Bytes 18 and 19 of the SQLite header are the file format versions: 2 means WAL.
        let header = try #require(FileManager.default.contents(atPath: path))
        #expect(header.count >= 100 && header[18] == 2 && header[19] == 2)
        #expect(FileManager.default.fileExists(atPath: path + "-wal"))
    }

    @Test func reopeningKeepsTheData() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("parley.sqlite")
        do {
            let storage = try SQLiteStorage(path: path)
            try await storage.createAccount(username: "juliet", keys: [StorageFixture.keys("SHA-1", seed: 4)])
            try await storage.deleteAccount(username: "juliet", origin: .admin)
            try await storage.createAccount(username: "juliet", keys: [StorageFixture.keys("SHA-1", seed: 5)])
        }
        let reopened = try SQLiteStorage(path: path)
        #expect(try await reopened.account(username: "juliet")?.keys == [StorageFixture.keys("SHA-1", seed: 5)])
        #expect(try await reopened.latestChangeID() == 1)
    }
}
