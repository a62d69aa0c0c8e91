import GRDB

/// The SQLite schema, as an ordered list of named migrations.
///
/// A migration that has shipped is never edited: a database file already carries its result.
/// Later stores append their own ("v2" rosters, offline messages, the archive, …).
enum SQLiteMigrations {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1", migrate: v1)
        return migrator
    }

    private static func v1(_ db: Database) throws {
        // AUTOINCREMENT so that an id is never reused: later tables reference accounts by id,
        // and a new account must not inherit rows left behind for a deleted one.
        try db.execute(
            sql: """
                CREATE TABLE accounts (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    username TEXT NOT NULL UNIQUE,
                    created_at TEXT NOT NULL
                );
                CREATE TABLE account_keys (
                    account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    hash_name TEXT NOT NULL,
                    salt BLOB NOT NULL,
                    iterations INTEGER NOT NULL CHECK (iterations > 0),
                    stored_key BLOB NOT NULL,
                    server_key BLOB NOT NULL,
                    PRIMARY KEY (account_id, hash_name)
                ) WITHOUT ROWID;
                """)
        // Keyed by username, not account id: the account row is gone when a deletion is read.
        // AUTOINCREMENT keeps ids growing after pruning, so a reader's cursor stays valid.
        try db.execute(
            sql: """
                CREATE TABLE account_changes (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    username TEXT NOT NULL,
                    kind TEXT NOT NULL CHECK (kind IN ('deleted', 'passwordChanged')),
                    origin TEXT NOT NULL CHECK (origin IN ('admin', 'inband')),
                    at TEXT NOT NULL
                );
                CREATE INDEX account_changes_at ON account_changes(at);
                """)
    }
}
