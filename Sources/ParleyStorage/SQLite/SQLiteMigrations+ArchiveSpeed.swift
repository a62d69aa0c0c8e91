import GRDB

/// The migrations that made the message archive cheaper to write, each measured
/// (bench/README.md): fewer indexes per row, rows in time order, one shared body per message,
/// no per-contact index.
extension SQLiteMigrations {
    /// Every archived message pays for each index on `archive_messages` (two rows per message,
    /// each inserted into every index, and the dirty pages written to the WAL at each commit):
    /// measured, the indexes were most of the archive's cost (bench/README.md). The age index
    /// served only the retention sweep, which the per-account time index serves as well; most
    /// messages have no origin-id, so that index keeps only those that do.
    static func v16ArchiveBatch(_ db: Database) throws {
        try db.execute(
            sql: """
                DROP INDEX archive_messages_age;
                DROP INDEX archive_messages_origin_id;
                CREATE INDEX archive_messages_origin_id ON archive_messages(account_id, origin_id) WHERE origin_id IS NOT NULL;
                """)
    }

    /// The archive's rows in time order: `archived_at` never decreases along `id` (rows
    /// stamped a moment apart on different threads, or under a clock set back, take the
    /// newest time before them, a difference of milliseconds), so a start/end filter and
    /// the retention sweep find their bound by walking the order, and the time index that
    /// every archived row paid for goes (bench/README.md: 4 indexes per row instead of 5).
    static func v17ArchiveRows(_ db: Database) throws {
        try db.execute(
            sql: """
                UPDATE archive_messages SET archived_at = ordered.latest
                FROM (SELECT id, MAX(archived_at) OVER (ORDER BY id) AS latest FROM archive_messages) AS ordered
                WHERE archive_messages.id = ordered.id AND archive_messages.archived_at < ordered.latest;
                DROP INDEX archive_messages_time;
                """)
    }

    /// A query `with` a contact reads the owner's entries in order and keeps that contact's,
    /// as Prosody's archive does: an index per account and contact was a quarter of the
    /// archive's write cost, one more B-tree leaf dirtied per account in every transaction
    /// (bench/README.md, "Tenth round" and "Seventeenth round"), for queries that read at
    /// most `max_messages_per_user` narrow rows without it.
    static func v22ArchiveWithoutWithIndex(_ db: Database) throws {
        try db.execute(sql: "DROP INDEX IF EXISTS archive_entries_with")
    }

    /// A message between two local accounts is one row, not two: `archive_bodies` holds it
    /// once (with `owners`, how many archives hold it, so the last one to let go deletes it),
    /// `archive_entries` one narrow row per archive that holds it, its position being the
    /// body's id; `has_origin_id` marks, for the partial index, the entries whose message
    /// has an origin-id (a user's own recent origin-ids, read at login). Measured, that is a quarter less of SQLite's CPU and 40% fewer bytes
    /// written per message than two full rows (bench/README.md, defaults mode). Existing rows
    /// keep their positions: each becomes a body of its own with one entry.
    static func v20PerfArchive(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE archive_bodies (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    owners INTEGER NOT NULL,
                    from_bare TEXT NOT NULL,
                    from_jid TEXT NOT NULL,
                    to_jid TEXT NOT NULL,
                    stanza_id TEXT NOT NULL,
                    origin_id TEXT,
                    message_id TEXT,
                    message_type TEXT,
                    stanza TEXT,
                    archived_at INTEGER NOT NULL,
                    retracted_at INTEGER
                );
                CREATE TABLE archive_entries (
                    account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    id INTEGER NOT NULL,
                    with_bare TEXT NOT NULL,
                    has_origin_id INTEGER,
                    PRIMARY KEY (account_id, id)
                ) WITHOUT ROWID;
                INSERT INTO archive_bodies
                    (id, owners, from_bare, from_jid, to_jid, stanza_id, origin_id, message_id, message_type, stanza, archived_at,
                     retracted_at)
                SELECT id, 1, from_bare, from_jid, to_jid, stanza_id, origin_id, message_id, message_type, stanza, archived_at,
                       retracted_at
                FROM archive_messages ORDER BY id;
                INSERT INTO archive_entries (account_id, id, with_bare, has_origin_id)
                SELECT account_id, id, with_bare, CASE WHEN origin_id IS NOT NULL THEN 1 END
                FROM archive_messages;
                DELETE FROM sqlite_sequence WHERE name = 'archive_bodies';
                INSERT INTO sqlite_sequence (name, seq)
                    SELECT 'archive_bodies', seq FROM sqlite_sequence WHERE name = 'archive_messages';
                DROP TABLE archive_messages;
                CREATE INDEX archive_bodies_stanza_id ON archive_bodies(stanza_id);
                CREATE INDEX archive_bodies_origin_id ON archive_bodies(origin_id) WHERE origin_id IS NOT NULL;
                CREATE INDEX archive_entries_with ON archive_entries(account_id, with_bare, id);
                CREATE INDEX archive_entries_origin_id ON archive_entries(account_id, id) WHERE has_origin_id IS NOT NULL;
                CREATE TRIGGER archive_entries_released AFTER DELETE ON archive_entries BEGIN
                    UPDATE archive_bodies SET owners = owners - 1 WHERE id = OLD.id;
                    DELETE FROM archive_bodies WHERE id = OLD.id AND owners <= 0;
                END;
                """)
    }
}
