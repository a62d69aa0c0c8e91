import Foundation
import Logging
import NIOCore
import NIOPosix
import ParleyStorage
import PostgresNIO

/// The storage backend for deployments that outgrow one machine: every store of
/// ParleyStorage on one PostgreSQL database, through postgres-nio's connection pool.
///
/// Queries run on the pool's connections (NIO channels), so no caller's thread ever waits on
/// the database; each store call is one transaction, and a call returns only once its
/// transaction has committed (PostgreSQL's default `synchronous_commit = on` has flushed it to
/// the WAL), so "acknowledged" means "committed" as with SQLite.
public final class PostgresStorage: Sendable {
    public struct Options: Sendable {
        /// Removed roster items remembered per user for roster deltas (XEP-0237).
        public var rosterTombstoneLimit: Int
        /// The most offline-message operations (or archive batches) committed in one
        /// transaction: as on SQLite, the 4,096 offline messages `OfflineWriter` hands over at
        /// once are one transaction, not eight (bench/README.md, PostgreSQL).
        public var offlineBatchLimit: Int
        /// Connections the pool opens at most.
        public var maximumConnections: Int
        /// How long a start keeps trying a database that refuses or does not answer
        /// connections (`PostgresReachability`).
        public var reachableWithin: Duration

        public init(
            rosterTombstoneLimit: Int = 1000, offlineBatchLimit: Int = 4096, maximumConnections: Int = 20,
            reachableWithin: Duration = .seconds(10)
        ) {
            self.rosterTombstoneLimit = rosterTombstoneLimit
            self.offlineBatchLimit = offlineBatchLimit
            self.maximumConnections = maximumConnections
            self.reachableWithin = reachableWithin
        }
    }

    /// The database, as configured (`storage.url`), without its password.
    public let location: String
    let options: Options
    let client: PostgresClient
    let logger: Logger
    /// Offline messages' stores and deletions, group-committed.
    let offlineWriter: PostgresGroupCommit
    /// The archive's batches, group-committed on a connection of their own, beside the
    /// offline messages' transactions rather than taking turns with them: in one queue, a
    /// message to an offline account had its offline row and its archive rows committed in two
    /// consecutive transactions (`OfflineWriter` and `ArchiveWriter` each wait for their
    /// previous batch before submitting the next, so the queue held one of them at a time),
    /// and its sender waited for both (bench/README.md, PostgreSQL: the commit cycle).
    let archiveWriter: PostgresGroupCommit
    let rosterObservers = RosterChangeObservers()
    private let runner: Task<Void, Never>
    /// The connections' own event loop, not one of the sessions': a group commit's
    /// megabyte of bound arrays is encoded and written there, and the sessions on the loop
    /// that did it waited meanwhile (bench/README.md, PostgreSQL).
    private let group: MultiThreadedEventLoopGroup

    private init(url: PostgresURL, options: Options, logger: Logger) {
        location = url.description
        self.options = options
        self.logger = logger
        var configuration = url.clientConfiguration
        configuration.options.maximumConnections = max(options.maximumConnections, 1)
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let client = PostgresClient(configuration: configuration, eventLoopGroup: group, backgroundLogger: logger)
        self.client = client
        runner = Task { await client.run() }
        offlineWriter = PostgresGroupCommit(client: client, batchLimit: options.offlineBatchLimit, logger: logger)
        archiveWriter = PostgresGroupCommit(client: client, batchLimit: options.offlineBatchLimit, logger: logger)
    }

    /// Connects to the database at `url` (`postgres://user[:password]@host[:port]/database`)
    /// and brings its schema up to date. Throws `StorageError.unusableDatabase` if the
    /// database cannot be reached or was migrated by a newer Parley.
    public static func open(url: String, options: Options = Options(), logger: Logger) async throws -> PostgresStorage {
        try await open(url: url, options: options, migratingThrough: nil, logger: logger)
    }

    /// `open`, with the schema brought only as far as the migration named `last` (for tests
    /// of the migrations after it).
    static func open(url: String, options: Options = Options(), migratingThrough last: String?, logger: Logger) async throws
        -> PostgresStorage
    {
        let parsed = try PostgresURL(url)
        try await PostgresReachability.check(
            parsed, within: options.reachableWithin, on: MultiThreadedEventLoopGroup.singleton.next(), logger: logger)
        let storage = PostgresStorage(url: parsed, options: options, logger: logger)
        do {
            try await PostgresMigrations.migrate(storage.client, through: last, logger: logger)
        } catch {
            await storage.close()
            if let error = error as? StorageError { throw error }
            throw StorageError.unusableDatabase("cannot prepare the PostgreSQL database \(storage.location): \(String(reflecting: error))")
        }
        return storage
    }

    /// Waits for the queued writes, then closes the pool's connections.
    public func close() async {
        await offlineWriter.waitUntilIdle()
        await archiveWriter.waitUntilIdle()
        runner.cancel()
        await runner.value
        try? await group.shutdownGracefully()
    }

    /// Rows in `table`, whoever owns them: for tests that check what goes with an account.
    func rowCount(of table: String) async throws -> Int {
        let logger = logger
        return try await read { connection in
            Int(try await connection.value(PostgresQuery(unsafeSQL: "SELECT COUNT(*) FROM \(table)"), as: Int64.self, logger: logger) ?? 0)
        }
    }

    // MARK: Helpers for the stores

    /// One transaction on one pooled connection: committed when `body` returns, rolled back
    /// when it throws.
    func transaction<T: Sendable>(_ body: @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        try await Self.unwrapping { try await client.withTransaction(logger: logger) { connection in try await body(connection) } }
    }

    /// postgres-nio wraps what a transaction's closure threw in a `PostgresTransactionError`;
    /// callers expect the store's own errors (`accountNotFound`, a roster body's error) as they
    /// were thrown, once the transaction has been rolled back.
    static func unwrapping<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as PostgresTransactionError {
            if let thrown = error.closureError, error.rollbackError == nil, error.commitError == nil { throw thrown }
            throw error
        }
    }

    /// A read: one statement or several on one connection, outside a transaction.
    func read<T: Sendable>(_ body: @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        try await client.withConnection { connection in try await body(connection) }
    }
}

extension PostgresConnection {
    /// The rows of `query`, all read.
    func rows(_ query: PostgresQuery, logger: Logger) async throws -> [PostgresRow] {
        try await self.query(query, logger: logger).collect()
    }

    func run(_ query: PostgresQuery, logger: Logger) async throws {
        _ = try await self.query(query, logger: logger).collect()
    }

    /// The first column of the first row, nil when there is none.
    func value<T: PostgresDecodable>(_ query: PostgresQuery, as type: T.Type = T.self, logger: Logger) async throws -> T? {
        guard let row = try await rows(query, logger: logger).first else { return nil }
        return try row.decode(T.self)
    }

    /// The id of `username`'s account, nil if there is none.
    ///
    /// `FOR KEY SHARE` when the caller writes rows referencing it: a concurrent deletion of
    /// the account waits for this transaction (or this one for it) instead of the insert
    /// failing on the foreign key.
    func accountID(of username: String, lock: Bool = false, logger: Logger) async throws -> Int64? {
        if lock {
            return try await value("SELECT id FROM accounts WHERE username = \(username) FOR KEY SHARE", logger: logger)
        }
        return try await value("SELECT id FROM accounts WHERE username = \(username)", logger: logger)
    }

    /// The id of `username`'s account, locked for writes referencing it; throws
    /// `StorageError.accountNotFound` if there is none.
    func existingAccountID(of username: String, logger: Logger) async throws -> Int64 {
        guard let id = try await accountID(of: username, lock: true, logger: logger) else {
            throw StorageError.accountNotFound(username: username)
        }
        return id
    }
}

/// Dates are stored as milliseconds since 1970 in BIGINT columns, as the SQLite archive
/// stores them: the same precision on both backends, and exact round trips.
enum Milliseconds {
    static func from(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
    }

    static func date(_ milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}

extension PostgresStorage {
    /// The names of the migrations applied to the database, in the order they were applied.
    public func appliedMigrations() async throws -> [String] {
        try await PostgresMigrations.applied(client, logger: logger)
    }
}
