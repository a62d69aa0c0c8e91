import Foundation
import GRDB
import Logging
import ParleyTestSupport
import Testing

@testable import ParleyPostgres
@testable import ParleyStorage

/// The storage backends every conformance test runs against.
enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgresql

    var testDescription: String { rawValue }
}

/// A fresh store of one backend for one test, with accounts: a file in a temporary directory,
/// or a new database in the process's PostgreSQL cluster.
final class StorageFixture: Sendable {
    struct Options: Sendable {
        var rosterTombstoneLimit = 1000
    }

    let backend: Backend
    let options: Options
    let storage: any ServerStorage
    private let directory: TemporaryDirectory?
    private let url: String?
    private let opened = OpenedStores()

    init(_ backend: Backend, users: [String] = ["juliet", "romeo"], options: Options = Options()) async throws {
        self.backend = backend
        self.options = options
        switch backend {
        case .sqlite:
            directory = try TemporaryDirectory()
            url = nil
        case .postgresql:
            directory = nil
            url = try await PostgresCluster.shared().createDatabase()
        }
        storage = try await Self.open(backend, directory: directory, url: url, options: options, opened: opened)
        for user in users {
            try await storage.createAccount(username: user, keys: [StorageFixture.keys("SHA-256", seed: 1)])
        }
    }

    /// Another store on the same file or database, as a restarted server or an admin command
    /// in another process opens it.
    func reopen() async throws -> any ServerStorage {
        try await Self.open(backend, directory: directory, url: url, options: options, opened: opened)
    }

    /// Closes what was opened (in the background: `defer` cannot wait) and removes the file.
    func remove() {
        let stores = opened.all
        let directory = directory
        Task {
            for store in stores { await store.close() }
            directory?.remove()
        }
    }

    static func keys(_ hashName: String, seed: UInt8) -> StoredSCRAMKeys {
        StoredSCRAMKeys(
            hashName: hashName, salt: [seed, 0, 0xFF], iterations: 4096,
            storedKey: Array(repeating: seed &+ 1, count: 32), serverKey: Array(repeating: seed &+ 2, count: 32))
    }

    private static func open(
        _ backend: Backend, directory: TemporaryDirectory?, url: String?, options: Options, opened: OpenedStores
    ) async throws -> any ServerStorage {
        switch backend {
        case .sqlite:
            return try SQLiteStorage(
                path: directory!.file("parley.sqlite"), options: .init(rosterTombstoneLimit: options.rosterTombstoneLimit))
        case .postgresql:
            let storage = try await PostgresStorage.open(
                url: url!, options: .init(rosterTombstoneLimit: options.rosterTombstoneLimit, maximumConnections: 4),
                logger: Logger(label: "parley.tests.postgres", factory: { _ in SwiftLogNoOpLogHandler() }))
            opened.add(storage)
            return storage
        }
    }
}

private final class OpenedStores: @unchecked Sendable {
    private let lock = NSLock()
    private var stores: [PostgresStorage] = []

    func add(_ store: PostgresStorage) { lock.withLock { stores.append(store) } }
    var all: [PostgresStorage] { lock.withLock { stores } }
}

extension StorageFixture {
    /// Rows in `table` of the schema (the same tables on both backends), whoever owns them.
    func rowCount(_ table: String) async throws -> Int {
        switch storage {
        case let sqlite as SQLiteStorage:
            return try await sqlite.pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table)") ?? -1 }
        case let postgres as PostgresStorage:
            return try await postgres.rowCount(of: table)
        default:
            preconditionFailure("no row count for \(type(of: storage))")
        }
    }

    /// Transactions the offline/archive group commit has written so far.
    var offlineBatchCount: Int {
        switch storage {
        case let sqlite as SQLiteStorage: sqlite.offlineWriter.batchCount
        case let postgres as PostgresStorage: postgres.offlineWriter.batchCount
        default: preconditionFailure("no group commit in \(type(of: storage))")
        }
    }
}
