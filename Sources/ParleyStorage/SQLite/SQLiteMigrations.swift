import GRDB

/// The SQLite schema, as an ordered list of named migrations.
///
/// A migration that has shipped is never edited: a database file already carries its result.
/// Later stores append their own ("v2" rosters, offline messages, the archive, …).
enum SQLiteMigrations {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1", migrate: v1)
        migrator.registerMigration("v2", migrate: v2)
        migrator.registerMigration("v3", migrate: v3)
        migrator.registerMigration("v4", migrate: v4)
        migrator.registerMigration("v5", migrate: v5)
        migrator.registerMigration("v6_pep", migrate: v6PEP)
        migrator.registerMigration("v7_profile", migrate: v7Profile)
        migrator.registerMigration("v8_account_identity", migrate: v8AccountIdentity)
        migrator.registerMigration("v10_muc", migrate: v10MUC)
        migrator.registerMigration("v11_uploads", migrate: v11Uploads)
        migrator.registerMigration("v12_muc_archive", migrate: v12MUCArchive)
        migrator.registerMigration("v13_muc_vcard", migrate: v13MUCVCard)
        migrator.registerMigration("v14_muc_registration", migrate: v14MUCRegistration)
        migrator.registerMigration("v16_archive_batch", migrate: v16ArchiveBatch)
        migrator.registerMigration("v17_archive_rows", migrate: v17ArchiveRows)
        migrator.registerMigration("v19_muc_speed", migrate: v19MUCSpeed)
        migrator.registerMigration("v20_perf_archive", migrate: v20PerfArchive)
        migrator.registerMigration("v21_muc_room_limits", migrate: v21MUCRoomLimits)
        migrator.registerMigration("v22_archive_without_with_index", migrate: v22ArchiveWithoutWithIndex)
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

    /// Instant messaging: rosters with their versions and tombstones, unanswered subscription
    /// requests, offline messages, block lists. Everything hangs off the owner's account and
    /// goes with it; rows naming a deleted user as a contact in other rosters stay.
    private static func v2(_ db: Database) throws {
        // One row per user whose roster has ever changed (no row: version 0). Versions up to
        // `pruned_through` may have lost their tombstones, so deltas from before it cannot be
        // answered.
        try db.execute(
            sql: """
                CREATE TABLE roster_versions (
                    account_id INTEGER PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
                    version INTEGER NOT NULL,
                    pruned_through INTEGER NOT NULL DEFAULT 0
                );
                CREATE TABLE roster_items (
                    account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    contact TEXT NOT NULL,
                    name TEXT,
                    groups TEXT NOT NULL,
                    subscription TEXT NOT NULL CHECK (subscription IN ('none', 'to', 'from', 'both')),
                    ask_subscribe INTEGER NOT NULL,
                    approved INTEGER NOT NULL,
                    version INTEGER NOT NULL,
                    PRIMARY KEY (account_id, contact)
                ) WITHOUT ROWID;
                CREATE INDEX roster_items_version ON roster_items(account_id, version);
                CREATE INDEX roster_items_contact ON roster_items(contact);
                CREATE TABLE roster_tombstones (
                    account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    contact TEXT NOT NULL,
                    version INTEGER NOT NULL,
                    PRIMARY KEY (account_id, contact)
                ) WITHOUT ROWID;
                CREATE INDEX roster_tombstones_version ON roster_tombstones(account_id, version);
                """)
        // A rowid table: a replaced request gets a new id and so moves to the end.
        try db.execute(
            sql: """
                CREATE TABLE roster_pending (
                    id INTEGER PRIMARY KEY,
                    account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    contact TEXT NOT NULL,
                    stanza TEXT NOT NULL,
                    received_at TEXT NOT NULL,
                    UNIQUE (account_id, contact)
                );
                """)
        // AUTOINCREMENT: ids are acknowledged and deleted by clients of the server; a deleted
        // id must never come back for another message.
        try db.execute(
            sql: """
                CREATE TABLE offline_messages (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    stanza TEXT NOT NULL,
                    stored_at TEXT NOT NULL
                );
                CREATE INDEX offline_messages_account ON offline_messages(account_id, id);
                CREATE TABLE blocked_jids (
                    account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    jid TEXT NOT NULL,
                    PRIMARY KEY (account_id, jid)
                ) WITHOUT ROWID;
                """)
    }

    /// The message archive (XEP-0313) and its preferences. One row per owner and message, so
    /// a message between two local users is in both archives; `id` is the archive order.
    /// A retracted message (XEP-0424) keeps its row with `stanza` cleared.
    private static func v3(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE archive_messages (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    with_bare TEXT NOT NULL,
                    from_bare TEXT NOT NULL,
                    from_jid TEXT NOT NULL,
                    to_jid TEXT NOT NULL,
                    stanza_id TEXT NOT NULL,
                    origin_id TEXT,
                    stanza TEXT,
                    archived_at INTEGER NOT NULL,
                    retracted_at INTEGER
                );
                CREATE INDEX archive_messages_account ON archive_messages(account_id, id);
                CREATE INDEX archive_messages_with ON archive_messages(account_id, with_bare, id);
                CREATE INDEX archive_messages_time ON archive_messages(account_id, archived_at);
                CREATE INDEX archive_messages_stanza_id ON archive_messages(account_id, stanza_id);
                CREATE INDEX archive_messages_origin_id ON archive_messages(account_id, origin_id);
                CREATE INDEX archive_messages_age ON archive_messages(archived_at);
                CREATE TABLE archive_preferences (
                    account_id INTEGER PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
                    default_mode TEXT NOT NULL CHECK (default_mode IN ('always', 'never', 'roster'))
                );
                CREATE TABLE archive_preference_jids (
                    account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    jid TEXT NOT NULL,
                    archive INTEGER NOT NULL,
                    PRIMARY KEY (account_id, jid)
                ) WITHOUT ROWID;
                """)
    }

    /// The origin-ids a user sent, newest first: read when the account's first session binds,
    /// so a resend after a restart is recognised (XEP-0359). Partial, as most rows are
    /// received messages or carry no origin-id.
    private static func v4(_ db: Database) throws {
        try db.execute(
            sql: "CREATE INDEX archive_messages_sent ON archive_messages(account_id, from_bare, id) WHERE origin_id IS NOT NULL")
    }

    /// The message's own `id` and `type`, kept apart from the stanza so that a retraction's
    /// tombstone (XEP-0424), whose stanza is gone, still names the message the way the
    /// clients that hold it do. Rows archived before have neither.
    private static func v5(_ db: Database) throws {
        try db.execute(
            sql: """
                ALTER TABLE archive_messages ADD COLUMN message_id TEXT;
                ALTER TABLE archive_messages ADD COLUMN message_type TEXT;
                """)
    }

    /// Personal eventing (XEP-0163): each account's nodes, their configuration as JSON (so
    /// a new option needs no migration), and their items in publication order (`seq`). The
    /// items go with their node, the nodes with their account.
    private static func v6PEP(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE pep_nodes (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    node TEXT NOT NULL,
                    configuration TEXT NOT NULL,
                    UNIQUE (account_id, node)
                );
                CREATE TABLE pep_items (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    node_id INTEGER NOT NULL REFERENCES pep_nodes(id) ON DELETE CASCADE,
                    item_id TEXT NOT NULL,
                    payload TEXT NOT NULL,
                    publisher TEXT NOT NULL,
                    published_at INTEGER NOT NULL,
                    UNIQUE (node_id, item_id)
                );
                CREATE INDEX pep_items_node ON pep_items(node_id, seq);
                """)
    }

    /// Profiles and per-account storage: the vCard (XEP-0054, with its photo's hash for
    /// XEP-0153), private XML (XEP-0049) keyed by element name and namespace, and the last
    /// logout (XEP-0012). All of it is the account's own and goes with it.
    private static func v7Profile(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE vcards (
                    account_id INTEGER PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
                    vcard TEXT NOT NULL,
                    photo_hash TEXT,
                    updated_at INTEGER NOT NULL
                );
                CREATE TABLE private_xml (
                    account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    namespace TEXT NOT NULL,
                    name TEXT NOT NULL,
                    xml TEXT NOT NULL,
                    PRIMARY KEY (account_id, namespace, name)
                ) WITHOUT ROWID;
                CREATE TABLE last_activity (
                    account_id INTEGER PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
                    logged_out_at INTEGER NOT NULL,
                    status TEXT
                );
                """)
    }

    /// Which account a change was made to, by its id: a username can belong to a new account
    /// by the time a reader sees the deletion of the old one, and only the id (AUTOINCREMENT,
    /// never reused) tells them apart. No foreign key: a deletion names a row that is gone.
    /// Rows recorded before have none, and readers treat them as naming the username.
    private static func v8AccountIdentity(_ db: Database) throws {
        try db.execute(sql: "ALTER TABLE account_changes ADD COLUMN account_id INTEGER")
    }

    /// Persistent multi-user chat rooms (XEP-0045): configuration, subject and the key of
    /// their occupant ids, one row per room of a service; and affiliations, which go with
    /// the room and, for local accounts, with the account.
    private static func v10MUC(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE muc_rooms (
                    service TEXT NOT NULL,
                    name TEXT NOT NULL,
                    title TEXT NOT NULL,
                    description TEXT NOT NULL,
                    is_public INTEGER NOT NULL,
                    whois TEXT NOT NULL,
                    occupants_change_subject INTEGER NOT NULL,
                    members_only INTEGER NOT NULL,
                    password TEXT,
                    subject TEXT,
                    subject_from TEXT,
                    occupant_id_key BLOB NOT NULL,
                    PRIMARY KEY (service, name)
                ) WITHOUT ROWID;
                CREATE TABLE muc_affiliations (
                    service TEXT NOT NULL,
                    room TEXT NOT NULL,
                    jid TEXT NOT NULL,
                    account_id INTEGER REFERENCES accounts(id) ON DELETE CASCADE,
                    affiliation TEXT NOT NULL,
                    PRIMARY KEY (service, room, jid),
                    FOREIGN KEY (service, room) REFERENCES muc_rooms(service, name) ON DELETE CASCADE
                ) WITHOUT ROWID;
                """)
    }

    /// XEP-0363 uploads: issued slots and the files stored through them. The rows go with the
    /// account; the files (keyed by account id) are removed by the HTTP service when it reads
    /// the deletion from the account change feed.
    private static func v11Uploads(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE uploads (
                    id TEXT PRIMARY KEY,
                    account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    filename TEXT NOT NULL,
                    size INTEGER NOT NULL CHECK (size >= 0),
                    content_type TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    state TEXT NOT NULL CHECK (state IN ('pending', 'uploading', 'stored'))
                ) WITHOUT ROWID;
                CREATE INDEX uploads_account ON uploads(account_id, created_at);
                CREATE INDEX uploads_created ON uploads(created_at);
                """)
    }

    /// Rooms' archives (XEP-0313 on the room JID), apart from the accounts' archives: one row
    /// per groupchat message, in archive order per room. No foreign key to muc_rooms, as
    /// temporary rooms are archived too (the service deletes their rows when they go). The
    /// sender's local account is linked so its real JID goes with it; the message stays, it
    /// is the room's record. And whether a stored room archives at all.
    private static func v12MUCArchive(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE muc_archive (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    service TEXT NOT NULL,
                    room TEXT NOT NULL,
                    stanza_id TEXT NOT NULL,
                    nick TEXT NOT NULL,
                    account_id INTEGER REFERENCES accounts(id) ON DELETE SET NULL,
                    sender_jid TEXT,
                    stanza TEXT NOT NULL,
                    archived_at INTEGER NOT NULL
                );
                CREATE INDEX muc_archive_room ON muc_archive(service, room, id);
                CREATE INDEX muc_archive_stanza_id ON muc_archive(service, room, stanza_id);
                CREATE INDEX muc_archive_account ON muc_archive(account_id) WHERE account_id IS NOT NULL;
                ALTER TABLE muc_rooms ADD COLUMN archiving INTEGER NOT NULL DEFAULT 1;
                """)
    }

    /// Room avatars (vcard-temp on the room JID, XEP-0153): a stored room's vCard and the
    /// SHA-1 of its photo, gone with the room.
    private static func v13MUCVCard(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE muc_vcards (
                    service TEXT NOT NULL,
                    room TEXT NOT NULL,
                    vcard TEXT NOT NULL,
                    photo_hash TEXT,
                    PRIMARY KEY (service, room),
                    FOREIGN KEY (service, room) REFERENCES muc_rooms(service, name) ON DELETE CASCADE
                ) WITHOUT ROWID;
                """)
    }

    /// XEP-0045 §7.10: the nickname a user reserved by registering with a room, kept with
    /// its affiliation (so it goes with the account, and with the room), one holder per
    /// nickname; and whether a room is moderated.
    private static func v14MUCRegistration(_ db: Database) throws {
        try db.execute(
            sql: """
                ALTER TABLE muc_affiliations ADD COLUMN nick TEXT;
                CREATE UNIQUE INDEX muc_affiliations_nick ON muc_affiliations(service, room, nick) WHERE nick IS NOT NULL;
                ALTER TABLE muc_rooms ADD COLUMN moderated INTEGER NOT NULL DEFAULT 0;
                """)
    }

    /// Who may send private messages in a stored room (muc#roomconfig_allowpm); existing
    /// rooms keep what they had, private messages from anyone.
    private static func v19MUCSpeed(_ db: Database) throws {
        try db.execute(sql: "ALTER TABLE muc_rooms ADD COLUMN allow_pm TEXT NOT NULL DEFAULT 'anyone'")
    }

    /// A stored room's occupant limit (muc#roomconfig_maxusers, 0: the service's) and whether
    /// members may invite to it (muc#roomconfig_allowinvites); existing rooms keep what they
    /// had: the service's limit, invitations by admins and owners in members-only rooms.
    private static func v21MUCRoomLimits(_ db: Database) throws {
        try db.execute(
            sql: """
                ALTER TABLE muc_rooms ADD COLUMN max_occupants INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE muc_rooms ADD COLUMN members_may_invite INTEGER NOT NULL DEFAULT 0;
                """)
    }
}
