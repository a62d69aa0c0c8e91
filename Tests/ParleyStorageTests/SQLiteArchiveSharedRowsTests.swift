import Foundation
import GRDB
import Testing

@testable import ParleyStorage

/// v20_perf_archive: a message in two archives is one body row and one narrow entry per
/// archive; the body goes with the last entry holding it; older databases keep their
/// messages, positions and ids.
@Suite struct SQLiteArchiveSharedRowsTests {
    private typealias Fixture = ArchiveStoreTests

    private func ids(_ page: ArchivePage) -> [String] { page.messages.map(\.stanzaID) }

    private func rows(_ storage: SQLiteStorage) async throws -> (bodies: [[Int64]], entries: Int) {
        try await storage.pool.read { db in
            (
                try Row.fetchAll(db, sql: "SELECT id, owners FROM archive_bodies ORDER BY id").map { [$0[0], $0[1]] },
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM archive_entries") ?? 0
            )
        }
    }

    @Test func bothArchivesShareOneBodyAtOnePosition() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let storage = try await SQLiteStorage.withAccounts(in: directory)
        // Two messages; the second's copies differ in their text, so they are two bodies.
        var different = Fixture.entries("m2", at: 200)
        different[1] = Fixture.rewritten(different[1], stanza: "<message xmlns='jabber:client' id='other'/>")
        try await storage.archive(Fixture.entries("m1", at: 100) + different, maxPerUser: nil)
        let (bodies, entries) = try await rows(storage)
        #expect(bodies.map { $0[1] } == [2, 1, 1] && entries == 4)
        let juliet = try await storage.queryArchive(user: "juliet", ArchiveQuery())
        let romeo = try await storage.queryArchive(user: "romeo", ArchiveQuery())
        #expect(ids(juliet) == ["m1", "m2"] && ids(romeo) == ["m1", "m2"])
        #expect(juliet.messages[0].position == romeo.messages[0].position)
        #expect(romeo.messages[1].stanza == different[0].stanza && juliet.messages[1].stanza == different[1].stanza)
        #expect(juliet.messages[0].from == Fixture.romeo + "/phone" && juliet.messages[0].messageID == "client-m1")
    }

    @Test func aBodyGoesWithTheLastArchiveHoldingIt() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let storage = try await SQLiteStorage.withAccounts(["juliet", "romeo", "nurse"], in: directory)
        try await storage.archive(Fixture.entries("m1", at: 100) + Fixture.entries("m2", at: 200), maxPerUser: nil)
        // Juliet's archive cut to one message: m1's body stays for romeo.
        try await storage.archive(
            [ArchiveEntry(owner: "juliet", with: "nurse@example.net", from: "nurse@example.net/a", to: "juliet@example.net",
                stanzaID: "n1", originID: nil, stanza: "<message/>", archivedAt: Date(timeIntervalSince1970: 300))],
            maxPerUser: 1)
        #expect(ids(try await storage.queryArchive(user: "juliet", ArchiveQuery())) == ["n1"])
        #expect(ids(try await storage.queryArchive(user: "romeo", ArchiveQuery())) == ["m1", "m2"])
        #expect(try await rows(storage).bodies.map { $0[1] } == [1, 1, 1])
        #expect(try await storage.deleteAccount(username: "romeo", origin: .admin))
        #expect(try await rows(storage).bodies.count == 1, "only n1, which juliet holds")
        #expect(try await storage.deleteAccount(username: "juliet", origin: .admin))
        let left = try await rows(storage)
        #expect(left.bodies.isEmpty && left.entries == 0)
    }

    /// A database from before v20: each row becomes a body with one entry at the same
    /// position, tombstones and origin-ids included; new positions come after the highest
    /// ever handed out, even one deleted since.
    @Test func anOlderDatabaseIsMigrated() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("parley.sqlite")
        var positions: [Int64] = []
        do {
            let queue = try DatabaseQueue(path: path)
            try SQLiteMigrations.migrator.migrate(queue, upTo: "v19_muc_speed")
            positions = try await queue.write { db -> [Int64] in
                var positions: [Int64] = []
                var accounts: [String: Int64] = [:]
                for user in ["juliet", "romeo"] {
                    try db.execute(sql: "INSERT INTO accounts (username, created_at) VALUES (?, 'x')", arguments: [user])
                    accounts[user] = db.lastInsertedRowID
                }
                let rows: [(String, String, String, String?, String?, Int64?)] = [
                    ("juliet", "romeo@example.net", "old1", "o1", "<message><body>1</body></message>", nil),
                    ("romeo", "juliet@example.net", "old1", "o1", "<message><body>1</body></message>", nil),
                    ("juliet", "romeo@example.net", "old2", nil, nil, 2500),
                    ("romeo", "juliet@example.net", "old3", nil, "<message><body>3</body></message>", nil),
                    ("romeo", "juliet@example.net", "gone", nil, "<message/>", nil),
                ]
                for (owner, with, stanzaID, originID, stanza, retractedAt) in rows {
                    try db.execute(
                        sql: """
                            INSERT INTO archive_messages (account_id, with_bare, from_bare, from_jid, to_jid, stanza_id, origin_id, stanza,
                                                          archived_at, retracted_at, message_id, message_type)
                            VALUES (?, ?, 'romeo@example.net', 'romeo@example.net/a', 'juliet@example.net', ?, ?, ?, 2000, ?, 'c', 'chat')
                            """, arguments: [accounts[owner], with, stanzaID, originID, stanza, retractedAt])
                    positions.append(db.lastInsertedRowID)
                }
                try db.execute(sql: "DELETE FROM archive_messages WHERE stanza_id = 'gone'")
                return positions
            }
            try queue.close()
        }
        let storage = try SQLiteStorage(path: path)
        let juliet = try await storage.queryArchive(user: "juliet", ArchiveQuery())
        #expect(ids(juliet) == ["old1", "old2"] && juliet.messages.map(\.position) == [positions[0], positions[2]])
        #expect(juliet.messages[1].stanza == nil && juliet.messages[1].retractedAt == Date(timeIntervalSince1970: 2.5))
        #expect(juliet.messages[0].stanza == "<message><body>1</body></message>" && juliet.messages[0].messageID == "c")
        let romeo = try await storage.queryArchive(user: "romeo", ArchiveQuery(with: "juliet@example.net"))
        #expect(ids(romeo) == ["old1", "old3"] && romeo.messages.map(\.position) == [positions[1], positions[3]])
        #expect(try await storage.recentOriginIDs(of: "romeo", sentAs: "romeo@example.net", limit: 5).map(\.originID) == ["o1"])
        #expect(ids(try await storage.queryArchive(user: "juliet", ArchiveQuery(after: "old1"))) == ["old2"])
        try await storage.archive(Fixture.entries("new", at: 3), maxPerUser: nil)
        let newest = try #require(try await storage.queryArchive(user: "romeo", ArchiveQuery()).messages.last)
        #expect(newest.stanzaID == "new" && newest.position > positions[4])
        let tables = try await storage.pool.read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'archive_%' ORDER BY name")
        }
        #expect(tables == ["archive_bodies", "archive_entries", "archive_preference_jids", "archive_preferences"])
    }
}
