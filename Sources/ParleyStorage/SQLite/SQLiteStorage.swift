import Foundation
import GRDB

/// The embedded storage backend: one SQLite file, opened through a GRDB `DatabasePool`.
///
/// The pool runs in WAL mode, so readers never wait for the writer. Several processes may
/// open the same file at once (the server, and `parleyd adduser` while it runs): SQLite
/// serialises their writes, and the busy timeout makes a writer wait for the lock instead of
/// failing with `SQLITE_BUSY`. All queries run on GRDB's own dispatch queues, never on the
/// caller's thread.
public final class SQLiteStorage: Sendable {
    public struct Options: Sendable {
        /// How long a write waits for another connection or process to release the lock.
        public var busyTimeout: TimeInterval
        /// Concurrent read connections.
        public var maximumReaderCount: Int
        /// Removed roster items remembered per user for roster deltas (XEP-0237); a client
        /// whose version is older than the oldest one kept gets the full roster.
        public var rosterTombstoneLimit: Int
        /// The most offline-message operations (or archive batches), and the most roster
        /// changes and logouts, committed in one SQLite transaction: a commit's cost is mostly
        /// per page it dirties, whatever the rows, so large batches under load are cheaper per
        /// message (bench/README.md).
        public var offlineBatchLimit: Int
        /// Fault injection for tests: called inside every archive transaction once its rows
        /// are written, just before it commits. Nil in normal operation.
        public var beforeArchiveCommit: (@Sendable () -> Void)?

        public init(
            busyTimeout: TimeInterval = 10, maximumReaderCount: Int = 5, rosterTombstoneLimit: Int = 1000,
            offlineBatchLimit: Int = 4096, beforeArchiveCommit: (@Sendable () -> Void)? = nil
        ) {
            self.busyTimeout = busyTimeout
            self.maximumReaderCount = maximumReaderCount
            self.rosterTombstoneLimit = rosterTombstoneLimit
            self.offlineBatchLimit = offlineBatchLimit
            self.beforeArchiveCommit = beforeArchiveCommit
        }
    }

    /// The database file.
    public let path: String
    let options: Options
    let pool: DatabasePool
    let offlineWriter: OfflineGroupCommit
    let rosterObservers = RosterChangeObservers()
    /// Roster changes and logouts: small transactions that share commits under load.
    let groupedWrites: GroupedWrites
    /// The short reads of a login, with fewer thread hops than GRDB's `async` API.
    let quickReads: QuickReads

    /// Opens the database at `path`, creating it and its directory if needed, and brings its
    /// schema up to date.
    ///
    /// This blocks while it opens and migrates: call it at start-up, not on an event loop.
    public init(path: String, options: Options = Options()) throws {
        self.path = path
        self.options = options
        try Self.createFileIfNeeded(at: path)
        // Two processes opening a new file at once (the server and `parleyd adduser`) would
        // race to switch it to WAL and to create the tables: one opens and migrates at a time.
        let initializationLock = try Self.lockDirectory(of: path)
        defer {
            flock(initializationLock, LOCK_UN)
            close(initializationLock)
        }

        var configuration = Configuration()
        configuration.busyMode = .timeout(options.busyTimeout)
        configuration.foreignKeysEnabled = true
        configuration.maximumReaderCount = options.maximumReaderCount
        configuration.prepareDatabase { db in
            // Each reader keeps a cache of its own, mostly the same hot pages as the others
            // (the accounts' and rosters' B-trees): SQLite's 2 MiB default made five readers
            // 10 MB, ~1 KB per session at 10,000 logged in. A page not cached comes from
            // the kernel's page cache in one pread. The writer's cache is set below.
            if db.configuration.readonly { try db.execute(sql: "PRAGMA cache_size = -512") }
        }
        pool = try DatabasePool(path: path, configuration: configuration)
        // In WAL mode NORMAL can lose the last commits on power loss; a message that was
        // acknowledged to its sender must survive that, so every commit is synced. Set here,
        // not in `prepareDatabase`: the pool switches its writer to WAL with
        // `synchronous = NORMAL` after that has run. The writer connection lives as long as
        // the pool, so once is enough.
        try pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            // The writer inserts into the archive's indexes at random places (stanza-ids are
            // random): with SQLite's default 2 MiB cache most inserts re-read a page through a
            // system call. 32 MiB keeps the hot index pages (measured: bench/README.md).
            try db.execute(sql: "PRAGMA cache_size = -32768")
        }

        let migrator = SQLiteMigrations.migrator
        // A file written by a newer parleyd has tables this one does not know how to keep
        // consistent; refuse it rather than half-work on it.
        if try pool.read(migrator.hasBeenSuperseded) {
            throw StorageError.unusableDatabase(
                "\(path) was created by a newer version of Parley; refusing to open it")
        }
        try migrator.migrate(pool)
        offlineWriter = OfflineGroupCommit(pool: pool, options: options)
        groupedWrites = GroupedWrites(pool: pool, batchLimit: options.offlineBatchLimit)
        // Two: one per core of a small machine; more would only wait for the CPU.
        quickReads = try QuickReads(path: path, configuration: configuration, count: min(2, options.maximumReaderCount))
    }

    /// An exclusive `flock` on the database's directory. Not on the database file itself:
    /// closing any descriptor of that file would drop the POSIX locks SQLite holds on it.
    private static func lockDirectory(of path: String) throws -> Int32 {
        let directory = (path as NSString).deletingLastPathComponent
        let descriptor = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw StorageError.unusableDatabase("cannot open the directory of \(path): \(String(cString: strerror(errno)))")
        }
        while flock(descriptor, LOCK_EX) != 0 {
            guard errno == EINTR else {
                close(descriptor)
                throw StorageError.unusableDatabase("cannot lock the directory of \(path): \(String(cString: strerror(errno)))")
            }
        }
        return descriptor
    }

    /// The id of `username`'s account, nil if there is none.
    static func accountID(of username: String, in db: Database) throws -> Int64? {
        try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT id FROM accounts WHERE username = ?"), arguments: [username])
    }

    /// The id of `username`'s account; throws `StorageError.accountNotFound` if there is none.
    static func existingAccountID(of username: String, in db: Database) throws -> Int64 {
        guard let id = try accountID(of: username, in: db) else {
            throw StorageError.accountNotFound(username: username)
        }
        return id
    }

    /// Creates the file owner-only (SQLite would use the umask, typically world-readable),
    /// so the SCRAM keys are not readable by other users. The WAL and shared-memory files
    /// that SQLite creates next to it copy this mode.
    private static func createFileIfNeeded(at path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        }
        // O_EXCL: another process may be creating the same file right now; whoever loses
        // simply opens the winner's file.
        let fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        if fd >= 0 {
            close(fd)
        } else if errno != EEXIST {
            throw StorageError.unusableDatabase("cannot create \(path): \(String(cString: strerror(errno)))")
        }
    }
}
