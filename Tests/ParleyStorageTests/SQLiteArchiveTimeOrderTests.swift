import Foundation
import GRDB
import Testing

@testable import ParleyStorage

/// v17_archive_rows: archive times never go backwards along the archive order, so start/end
/// filters and the retention sweep find their bounds through the order, without a time index.
@Suite struct SQLiteArchiveTimeOrderTests {
    private typealias Fixture = ArchiveStoreTests

    private func ids(_ page: ArchivePage) -> [String] { page.messages.map(\.stanzaID) }

    private func seconds(_ value: Double) -> Date { Date(timeIntervalSince1970: value) }

    @Test func aTimeEarlierThanTheLastTakesTheLast() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let storage = try await SQLiteStorage.withAccounts(in: directory)
        // m2 was stamped a moment before m1 on another thread, or the clock was set back.
        try await storage.archive(Fixture.entries("m1", at: 500) + Fixture.entries("m2", at: 100), maxPerUser: nil)
        try await storage.archive(Fixture.entries("m3", at: 90), maxPerUser: nil)
        try await storage.archive(Fixture.entries("m4", at: 600), maxPerUser: nil)
        let all = try await storage.queryArchive(user: "juliet", ArchiveQuery(max: 10))
        #expect(ids(all) == ["m1", "m2", "m3", "m4"])
        #expect(all.messages.map(\.archivedAt) == [seconds(500), seconds(500), seconds(500), seconds(600)])
    }

    @Test func startAndEndSelectByTime() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let storage = try await SQLiteStorage.withAccounts(in: directory)
        for index in 1...6 {
            try await storage.archive(Fixture.entries("m\(index)", at: Double(index * 100)), maxPerUser: nil)
        }
        func query(start: Double?, end: Double?) async throws -> [String] {
            try await ids(storage.queryArchive(user: "romeo", ArchiveQuery(start: start.map(seconds), end: end.map(seconds), max: 10)))
        }
        #expect(try await query(start: 300, end: nil) == ["m3", "m4", "m5", "m6"])
        #expect(try await query(start: 301, end: nil) == ["m4", "m5", "m6"])
        #expect(try await query(start: nil, end: 300) == ["m1", "m2", "m3"])
        #expect(try await query(start: nil, end: 299) == ["m1", "m2"])
        #expect(try await query(start: 200, end: 400) == ["m2", "m3", "m4"])
        #expect(try await query(start: 700, end: nil) == [])
        #expect(try await query(start: nil, end: 50) == [])
        #expect(try await query(start: 0, end: 1000) == ["m1", "m2", "m3", "m4", "m5", "m6"])
        let page = try await storage.queryArchive(user: "romeo", ArchiveQuery(start: seconds(200), after: "m3", max: 2))
        #expect(ids(page) == ["m4", "m5"] && page.count == 5 && page.firstIndex == 2 && !page.complete)
    }

    @Test func retentionDeletesWhatIsOlderThroughTheOrder() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let storage = try await SQLiteStorage.withAccounts(in: directory)
        for index in 1...5 {
            try await storage.archive(Fixture.entries("m\(index)", at: Double(index * 100)), maxPerUser: nil)
        }
        #expect(try await storage.pruneArchive(before: seconds(300)) == 4)  // m1 and m2, in both archives
        #expect(try await ids(storage.queryArchive(user: "juliet", ArchiveQuery(max: 10))) == ["m3", "m4", "m5"])
        #expect(try await storage.pruneArchive(before: seconds(300)) == 0)
        #expect(try await storage.pruneArchive(before: seconds(10_000)) == 6)
        #expect(try await storage.queryArchive(user: "romeo", ArchiveQuery(max: 10)).messages.isEmpty)
    }

    /// A database from before v17 gets its times put in order and loses the time index, and
    /// its messages answer queries as before.
    @Test func anOlderDatabaseIsMigrated() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("parley.sqlite")
        do {
            let queue = try DatabaseQueue(path: path)
            try SQLiteMigrations.migrator.migrate(queue, upTo: "v16_archive_batch")
            try await queue.write { db in
                try db.execute(sql: "INSERT INTO accounts (username, created_at) VALUES ('juliet', 'x')")
                let juliet = db.lastInsertedRowID
                for (stanzaID, milliseconds) in [("old1", 5000), ("old2", 4000), ("old3", 6000)] {
                    try db.execute(
                        sql: """
                            INSERT INTO archive_messages (account_id, with_bare, from_bare, from_jid, to_jid, stanza_id, stanza, archived_at)
                            VALUES (?, 'romeo@example.net', 'romeo@example.net', 'romeo@example.net/a', 'juliet@example.net', ?, '<message/>', ?)
                            """, arguments: [juliet, stanzaID, milliseconds])
                }
            }
            try queue.close()
        }
        let storage = try SQLiteStorage(path: path)
        let page = try await storage.queryArchive(user: "juliet", ArchiveQuery(max: 10))
        #expect(ids(page) == ["old1", "old2", "old3"])
        #expect(page.messages.map(\.archivedAt) == [seconds(5), seconds(5), seconds(6)])
        #expect(try await ids(storage.queryArchive(user: "juliet", ArchiveQuery(start: seconds(5), max: 10))) == ["old1", "old2", "old3"])
        #expect(try await ids(storage.queryArchive(user: "juliet", ArchiveQuery(start: seconds(5.5), max: 10))) == ["old3"])
        // v20_perf_archive then replaced the table; its test is SQLiteArchiveSharedRowsTests.
        let indexes = try await storage.pool.read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'archive_%'")
        }
        #expect(!indexes.contains("archive_messages_time") && indexes.contains("archive_bodies_stanza_id"))
    }
}
