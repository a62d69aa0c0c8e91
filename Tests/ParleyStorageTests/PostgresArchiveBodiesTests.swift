import Foundation
import Logging
import ParleyTestSupport
import PostgresNIO
import Testing

@testable import ParleyPostgres
@testable import ParleyStorage

/// v11_archive_bodies, the PostgreSQL twin of SQLite's v20_perf_archive: a message in two
/// archives is one body row and one narrow entry per archive; the body goes with the last
/// entry holding it; older databases keep their messages, positions and ids, and every
/// archive query answers as before.
@Suite struct PostgresArchiveBodiesTests {
    private typealias Fixture = ArchiveStoreTests
    static let logger = Logger(label: "parley.tests.postgres", factory: { _ in SwiftLogNoOpLogHandler() })

    private func ids(_ page: ArchivePage) -> [String] { page.messages.map(\.stanzaID) }

    private func open(_ url: String, through last: String? = nil) async throws -> PostgresStorage {
        try await PostgresStorage.open(url: url, options: .init(maximumConnections: 2), migratingThrough: last, logger: Self.logger)
    }

    private func bodies(_ storage: PostgresStorage) async throws -> [[Int64]] {
        let logger = Self.logger
        return try await storage.read { connection in
            try await connection.rows("SELECT id, owners::bigint FROM archive_bodies ORDER BY id", logger: logger).map { row in
                let (id, owners) = try row.decode((Int64, Int64).self)
                return [id, owners]
            }
        }
    }

    @Test func bothArchivesShareOneBodyAtOnePosition() async throws {
        let storage = try await open(try await PostgresCluster.shared().createDatabase())
        defer { Task { await storage.close() } }
        for user in ["juliet", "romeo"] { try await storage.createAccount(username: user, keys: [StorageFixture.keys("SHA-256", seed: 1)]) }
        // Two messages; the second's copies differ in their text, so they are two bodies.
        var different = Fixture.entries("m2", at: 200, origin: "o2")
        different[1] = Fixture.rewritten(different[1], stanza: "<message xmlns='jabber:client' id='other'/>")
        try await storage.archive(Fixture.entries("m1", at: 100) + different, maxPerUser: nil)
        #expect(try await bodies(storage).map { $0[1] } == [2, 1, 1])
        #expect(try await storage.rowCount(of: "archive_entries") == 4)
        let juliet = try await storage.queryArchive(user: "juliet", ArchiveQuery())
        let romeo = try await storage.queryArchive(user: "romeo", ArchiveQuery())
        #expect(ids(juliet) == ["m1", "m2"] && ids(romeo) == ["m1", "m2"])
        #expect(juliet.messages[0].position == romeo.messages[0].position)
        #expect(romeo.messages[1].stanza == different[0].stanza && juliet.messages[1].stanza == different[1].stanza)
        #expect(juliet.messages[0].from == Fixture.romeo + "/phone" && juliet.messages[0].messageID == "client-m1")
        #expect(juliet.messages[0].originID == nil && juliet.messages[1].originID == "o2" && juliet.messages[1].messageType == "chat")
        #expect(try await storage.recentOriginIDs(of: "romeo", sentAs: Fixture.romeo, limit: 5).map(\.originID) == ["o2"])
        // A retraction tombstones the shared body for both archives.
        try await storage.archive(Fixture.entries("r1", at: 300, retracts: "m1"), maxPerUser: nil)
        var byID = ArchiveQuery()
        byID.ids = ["m1"]
        let retracted = try await storage.queryArchive(user: "juliet", byID)
        #expect(retracted.messages.count == 1 && retracted.messages[0].stanza == nil && retracted.messages[0].retractedAt != nil)
    }

    @Test func aBodyGoesWithTheLastArchiveHoldingIt() async throws {
        let storage = try await open(try await PostgresCluster.shared().createDatabase())
        defer { Task { await storage.close() } }
        for user in ["juliet", "romeo", "nurse"] {
            try await storage.createAccount(username: user, keys: [StorageFixture.keys("SHA-256", seed: 1)])
        }
        try await storage.archive(Fixture.entries("m1", at: 100) + Fixture.entries("m2", at: 200), maxPerUser: nil)
        // Juliet's archive cut to one message: m1's and m2's bodies stay for romeo.
        try await storage.archive(
            [ArchiveEntry(owner: "juliet", with: "nurse@example.net", from: "nurse@example.net/a", to: "juliet@example.net",
                stanzaID: "n1", originID: nil, stanza: "<message/>", archivedAt: Date(timeIntervalSince1970: 300))],
            maxPerUser: 1)
        #expect(ids(try await storage.queryArchive(user: "juliet", ArchiveQuery())) == ["n1"])
        #expect(ids(try await storage.queryArchive(user: "romeo", ArchiveQuery())) == ["m1", "m2"])
        #expect(try await bodies(storage).map { $0[1] } == [1, 1, 1])
        #expect(try await storage.deleteAccount(username: "romeo", origin: .admin))
        #expect(try await bodies(storage).count == 1, "only n1, which juliet holds")
        #expect(try await storage.pruneArchive(before: Date(timeIntervalSince1970: 400)) == 1)
        #expect(try await bodies(storage).isEmpty)
        #expect(try await storage.rowCount(of: "archive_entries") == 0)
    }

    /// A database from before v11: each row becomes a body with one entry at the same
    /// position, tombstones and origin-ids included; every filter finds what it found; new
    /// positions come after the highest ever handed out, even one deleted since.
    @Test func anOlderDatabaseIsMigrated() async throws {
        let url = try await PostgresCluster.shared().createDatabase()
        let logger = Self.logger
        let old = try await open(url, through: "v10_cluster_rooms")
        for user in ["juliet", "romeo"] { try await old.createAccount(username: user, keys: [StorageFixture.keys("SHA-256", seed: 1)]) }
        let rows: [(String, String, String, String?, String?, Int64?, Int64)] = [
            ("juliet", "romeo@example.net", "old1", "o1", "<message><body>1</body></message>", nil, 2000),
            ("romeo", "juliet@example.net", "old1", "o1", "<message><body>1</body></message>", nil, 2000),
            ("juliet", "romeo@example.net", "old2", nil, nil, 2500, 3000),
            ("romeo", "juliet@example.net", "old3", nil, "<message><body>3</body></message>", nil, 4000),
            ("romeo", "juliet@example.net", "gone", nil, "<message/>", nil, 5000),
        ]
        let positions = try await old.transaction { connection in
            var positions: [Int64] = []
            for (owner, with, stanzaID, originID, stanza, retractedAt, at) in rows {
                let id = try await connection.value(
                    """
                    INSERT INTO archive_messages (account_id, with_bare, from_bare, from_jid, to_jid, stanza_id, origin_id, stanza,
                                                  archived_at, retracted_at, message_id, message_type)
                    SELECT id, \(with), 'romeo@example.net', 'romeo@example.net/a', 'juliet@example.net', \(stanzaID), \(originID),
                           \(stanza), \(at), \(retractedAt), 'c', 'chat'
                    FROM accounts WHERE username = \(owner) RETURNING id
                    """, as: Int64.self, logger: logger)
                positions.append(try #require(id))
            }
            try await connection.run("DELETE FROM archive_messages WHERE stanza_id = 'gone'", logger: logger)
            return positions
        }
        await old.close()

        let storage = try await open(url)
        defer { Task { await storage.close() } }
        let juliet = try await storage.queryArchive(user: "juliet", ArchiveQuery())
        #expect(ids(juliet) == ["old1", "old2"] && juliet.messages.map(\.position) == [positions[0], positions[2]])
        #expect(juliet.messages[1].stanza == nil && juliet.messages[1].retractedAt == Date(timeIntervalSince1970: 2.5))
        #expect(juliet.messages[0].stanza == "<message><body>1</body></message>" && juliet.messages[0].messageID == "c")
        #expect(juliet.messages[0].originID == "o1" && juliet.messages[0].archivedAt == Date(timeIntervalSince1970: 2))
        let romeo = try await storage.queryArchive(user: "romeo", ArchiveQuery(with: "juliet@example.net"))
        #expect(ids(romeo) == ["old1", "old3"] && romeo.messages.map(\.position) == [positions[1], positions[3]])
        #expect(romeo.count == 2 && romeo.complete && romeo.firstIndex == 0)
        #expect(try await storage.recentOriginIDs(of: "romeo", sentAs: "romeo@example.net", limit: 5).map(\.originID) == ["o1"])
        #expect(ids(try await storage.queryArchive(user: "juliet", ArchiveQuery(after: "old1"))) == ["old2"])
        #expect(ids(try await storage.queryArchive(user: "romeo", ArchiveQuery(before: ""))) == ["old1", "old3"])
        #expect(ids(try await storage.queryArchive(user: "romeo", ArchiveQuery(start: Date(timeIntervalSince1970: 3)))) == ["old3"])
        #expect(ids(try await storage.queryArchive(user: "romeo", ArchiveQuery(end: Date(timeIntervalSince1970: 3)))) == ["old1"])
        #expect(
            ids(try await storage.queryArchive(user: "romeo", ArchiveQuery(with: "romeo@example.net/a", withIsFull: true)))
                == ["old1", "old3"])
        var byIDs = ArchiveQuery()
        byIDs.ids = ["old3", "old2"]
        #expect(ids(try await storage.queryArchive(user: "romeo", byIDs)) == ["old3"])
        var afterID = ArchiveQuery()
        afterID.afterID = "old1"
        let page = try await storage.queryArchive(user: "romeo", afterID)
        #expect(ids(page) == ["old3"] && page.count == 1)
        try await storage.archive(Fixture.entries("new", at: 6), maxPerUser: nil)
        let newest = try #require(try await storage.queryArchive(user: "romeo", ArchiveQuery()).messages.last)
        #expect(newest.stanzaID == "new" && newest.position > positions[4])
        let tables = try await storage.read { connection in
            try await connection.rows(
                "SELECT tablename::text FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE 'archive\\_%' ORDER BY tablename",
                logger: logger
            ).map { try $0.decode(String.self) }
        }
        #expect(tables == ["archive_bodies", "archive_entries", "archive_preference_jids", "archive_preferences"])
    }

    /// `parleyd storage copy`: SQLite's bodies and entries arrive as they are (positions,
    /// shared bodies, tombstones), every query answers the same on both, and new messages
    /// come after the copied ones.
    @Test func aSQLiteArchiveIsCopiedBodiesAndEntries() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let sqlite = try await SQLiteStorage.withAccounts(in: directory)
        // More entries than a page of the copy.
        var entries: [ArchiveEntry] = []
        for index in 0..<700 {
            entries += Fixture.entries("m\(index)", from: index % 3 == 0 ? Fixture.juliet : Fixture.romeo, at: Double(index),
                origin: index % 2 == 0 ? "o\(index)" : nil)
        }
        try await sqlite.archive(entries, maxPerUser: nil)
        try await sqlite.archive(Fixture.entries("r1", at: 800, retracts: "m1"), maxPerUser: nil)
        let url = try await PostgresCluster.shared().createDatabase()
        let storage = try await open(url)
        defer { Task { await storage.close() } }
        let copied = try await SQLiteImport.copy(fromSQLite: directory.file("parley.sqlite"), to: storage)
        #expect(copied.first { $0.table == "archive_entries" }?.rows == 1402)
        #expect(copied.first { $0.table == "archive_bodies" }?.rows == 701)
        var queries = [ArchiveQuery(max: 1000), ArchiveQuery(with: Fixture.juliet, max: 30), ArchiveQuery(before: "", max: 7),
            ArchiveQuery(start: Date(timeIntervalSince1970: 100), end: Date(timeIntervalSince1970: 200), after: "m150")]
        var byIDs = ArchiveQuery()
        byIDs.ids = ["m1", "m5", "r1"]
        queries.append(byIDs)
        for user in ["juliet", "romeo"] {
            for query in queries {
                #expect(try await storage.queryArchive(user: user, query) == sqlite.queryArchive(user: user, query), "\(user) \(query)")
            }
            #expect(
                try await storage.recentOriginIDs(of: user, sentAs: user + "@example.net", limit: 20)
                    == sqlite.recentOriginIDs(of: user, sentAs: user + "@example.net", limit: 20))
        }
        let last = try #require(try await sqlite.queryArchive(user: "romeo", ArchiveQuery(before: "", max: 1)).messages.last)
        try await storage.archive(Fixture.entries("new", at: 900), maxPerUser: nil)
        let newest = try #require(try await storage.queryArchive(user: "romeo", ArchiveQuery(before: "", max: 1)).messages.last)
        #expect(newest.stanzaID == "new" && newest.position > last.position)
    }
}
