import Foundation
import Logging
import ParleyPostgres
import ParleyStorage
import ParleyTestSupport
import Testing

/// What only the PostgreSQL backend has: its URL, its migrations shared by several nodes.
@Suite struct PostgresStorageTests {
    static let logger = Logger(label: "parley.tests.postgres", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Two nodes starting at once on a fresh database: both migrate, neither fails, the
    /// schema is there once.
    @Test func twoNodesCanMigrateAFreshDatabaseAtOnce() async throws {
        let url = try await PostgresCluster.shared().createDatabase()
        async let a = PostgresStorage.open(url: url, logger: Self.logger)
        async let b = PostgresStorage.open(url: url, logger: Self.logger)
        let (first, second) = try await (a, b)
        try await first.createAccount(username: "juliet", keys: [StorageFixture.keys("SHA-256", seed: 1)])
        #expect(try await second.usernames() == ["juliet"])
        let third = try await PostgresStorage.open(url: url, logger: Self.logger)
        #expect(try await third.appliedMigrations() == ["v1_accounts", "v2_im", "v3_archive", "v4_pep", "v5_profile", "v6_muc", "v7_uploads", "v8_cluster", "v9_muc_allowpm", "v10_cluster_rooms", "v11_archive_bodies", "v12_muc_room_limits", "v13_archive_without_with_index"])
        for storage in [first, second, third] { await storage.close() }
    }

    @Test func badURLsAreRefusedWithTheReason() async throws {
        for (url, reason) in [
            ("mysql://parley@127.0.0.1/parley", "is not a postgres://"),
            ("postgres://127.0.0.1:5432/parley", "names no user"),
            ("postgres://parley@127.0.0.1:5432/", "names no database"),
            ("postgres://parley@127.0.0.1/parley?sslmode=verify-full", "sslmode 'verify-full'"),
        ] {
            do {
                _ = try await PostgresStorage.open(url: url, logger: Self.logger)
                Issue.record("\(url) was accepted")
            } catch let error as StorageError {
                #expect("\(error)".contains(reason), "\(url): \(error)")
            }
        }
    }

    /// Nothing listens: the start fails with the database and the reason named, once the
    /// window for a database still starting has passed, not after the pool's minute of retries.
    @Test func anUnreachableDatabaseFailsTheStart() async throws {
        let port = try LoopbackPort.unusedBelowEphemeralRange()
        let url = "postgres://parley:secret@127.0.0.1:\(port)/parley?sslmode=disable"
        let error = await #expect(throws: StorageError.self) {
            _ = try await PostgresStorage.open(url: url, options: .init(reachableWithin: .seconds(1)), logger: Self.logger)
        }
        let message = "\(error.map(String.init(describing:)) ?? "")"
        #expect(message.contains("postgres://parley@127.0.0.1:\(port)/parley"), "\(message)")
        #expect(message.lowercased().contains("refused"), "\(message)")
        #expect(!message.contains("secret"), "\(message)")
    }

    /// The server answers and refuses (here: no such database): that does not get better by
    /// waiting, so the start fails at once, in the server's words, inside any window.
    @Test func aDatabaseTheServerRefusesFailsTheStartWithItsReason() async throws {
        let cluster = try await PostgresCluster.shared()
        let clock = ContinuousClock()
        let start = clock.now
        let error = await #expect(throws: StorageError.self) {
            _ = try await PostgresStorage.open(
                url: cluster.url(database: "no_such_database"), options: .init(reachableWithin: .seconds(600)), logger: Self.logger)
        }
        // Not a timing bound: a retry would wait for the ten-minute window.
        #expect(clock.now - start < .seconds(300))
        let message = "\(error.map(String.init(describing:)) ?? "")"
        #expect(message.contains("no_such_database") && message.contains("3D000"), "\(message)")

        // TLS required of a server that offers none: the same on every try.
        let plain = try cluster.createDatabase()
        let tls = await #expect(throws: StorageError.self) {
            _ = try await PostgresStorage.open(
                url: plain.replacingOccurrences(of: "sslmode=disable", with: "sslmode=require"),
                options: .init(reachableWithin: .seconds(600)), logger: Self.logger)
        }
        #expect(clock.now - start < .seconds(300))
        #expect("\(tls.map(String.init(describing:)) ?? "")".contains("does not offer TLS"), "\(String(describing: tls))")
    }
}
