import GRDB
import Testing

@testable import ParleyStorage

@Suite struct SQLiteDurabilityTests {
    /// Every commit is synced (FULL = 2): GRDB's pool sets NORMAL on its writer, which in WAL
    /// mode can lose the last commits on power loss.
    @Test func theWriterSyncsEveryCommit() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let storage = try SQLiteStorage(path: directory.file("parley.sqlite"))
        let synchronous = try await storage.pool.writeWithoutTransaction { db in
            try Int.fetchOne(db, sql: "PRAGMA synchronous")
        }
        #expect(synchronous == 2)
    }
}
