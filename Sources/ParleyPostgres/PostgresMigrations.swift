import Foundation
import Logging
import ParleyStorage
import PostgresNIO

/// The PostgreSQL schema, as an ordered list of named migrations, the scheme of the SQLite
/// side: `schema_migrations` names those applied, each is applied once, in order, in its own
/// transaction together with its row. A migration that has shipped is never edited.
///
/// The first ones hold the schema the SQLite file reached through its own history, one per
/// concern. Text that is sorted or compared byte for byte (usernames, JIDs, node names) is
/// `COLLATE "C"`, SQLite's BINARY order, whatever the database's locale. Dates are BIGINT
/// milliseconds. Everything an account owns references it `ON DELETE CASCADE`.
enum PostgresMigrations {
    static let all: [(name: String, sql: String)] = [
        ("v1_accounts", accounts),
        ("v2_im", instantMessaging),
        ("v3_archive", archive),
        ("v4_pep", pep),
        ("v5_profile", profile),
        ("v6_muc", muc),
        ("v7_uploads", uploads),
        ("v8_cluster", cluster),
        ("v9_muc_allowpm", mucAllowPM),
        ("v10_cluster_rooms", clusterRooms),
        ("v11_archive_bodies", archiveBodies),
        ("v12_muc_room_limits", mucRoomLimits),
        ("v13_archive_without_with_index", archiveWithoutWithIndex),
    ]

    /// Two nodes starting at once take turns: the advisory lock is held by each migration's
    /// transaction, and each looks again at what is applied once it holds it.
    static let lockKey: Int64 = 0x5041_524C_4559  // "PARLEY"

    /// `through`: the last migration to apply (tests of a migration start from the schema
    /// before it); all of them when nil.
    static func migrate(_ client: PostgresClient, through last: String? = nil, logger: Logger) async throws {
        let migrations = last.flatMap { last in all.firstIndex { $0.name == last }.map { Array(all[...$0]) } } ?? all
        // Under the lock too: two CREATE TABLE IF NOT EXISTS at once can both try to create it.
        try await PostgresStorage.unwrapping {
            try await client.withTransaction(logger: logger) { connection in
                try await connection.run("SELECT pg_advisory_xact_lock(\(lockKey))", logger: logger)
                try await connection.run(
                """
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    identifier TEXT PRIMARY KEY,
                    applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
                )
                """, logger: logger)
            }
        }
        for migration in migrations {
            try await PostgresStorage.unwrapping { try await client.withTransaction(logger: logger) { connection in
                try await connection.run("SELECT pg_advisory_xact_lock(\(lockKey))", logger: logger)
                let applied = try await connection.value(
                    "SELECT identifier FROM schema_migrations WHERE identifier = \(migration.name)", as: String.self, logger: logger)
                guard applied == nil else { return }
                logger.info("applying a PostgreSQL migration", metadata: ["migration": "\(migration.name)"])
                // One statement at a time: the extended protocol takes one per query.
                for statement in statements(of: migration.sql) {
                    try await connection.run(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.run("INSERT INTO schema_migrations (identifier) VALUES (\(migration.name))", logger: logger)
            } }
        }
        // A database a newer Parley migrated has tables this one does not know how to keep
        // consistent; refuse it rather than half-work on it.
        let known = Set(all.map(\.name))
        let applied = try await client.withConnection { connection in
            try await connection.rows("SELECT identifier FROM schema_migrations", logger: logger).map { try $0.decode(String.self) }
        }
        if let unknown = applied.first(where: { !known.contains($0) }) {
            throw StorageError.unusableDatabase(
                "the PostgreSQL database was migrated by a newer version of Parley (migration '\(unknown)'); refusing to use it")
        }
    }

    /// The statements of a migration: the migrations hold no ';' but between statements and
    /// inside a function's `$$`-quoted body.
    static func statements(of sql: String) -> [String] {
        var statements: [String] = []
        var current = ""
        for (index, part) in sql.components(separatedBy: "$$").enumerated() {
            if index % 2 == 1 {
                current += "$$" + part + "$$"
                continue
            }
            let pieces = part.split(separator: ";", omittingEmptySubsequences: false)
            for (number, piece) in pieces.enumerated() {
                current += piece
                if number < pieces.count - 1 {
                    statements.append(current)
                    current = ""
                }
            }
        }
        statements.append(current)
        return statements.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.filter { !$0.isEmpty }
    }

    /// The names of the migrations applied, in order: for `parleyd storage migrate`.
    static func applied(_ client: PostgresClient, logger: Logger) async throws -> [String] {
        try await client.withConnection { connection in
            try await connection.rows("SELECT identifier FROM schema_migrations ORDER BY applied_at, identifier", logger: logger)
                .map { try $0.decode(String.self) }
        }
    }

    /// Ids are identities (never reused: a new account must not inherit rows of a deleted
    /// one). The change feed is keyed by username, as the account row is gone when a
    /// deletion is read, and carries the account id without a foreign key.
    private static let accounts = """
        CREATE TABLE accounts (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            username TEXT COLLATE "C" NOT NULL UNIQUE,
            created_at BIGINT NOT NULL
        );
        CREATE TABLE account_keys (
            account_id BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
            hash_name TEXT COLLATE "C" NOT NULL,
            salt BYTEA NOT NULL,
            iterations INTEGER NOT NULL CHECK (iterations > 0),
            stored_key BYTEA NOT NULL,
            server_key BYTEA NOT NULL,
            PRIMARY KEY (account_id, hash_name)
        );
        CREATE TABLE account_changes (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            username TEXT NOT NULL,
            account_id BIGINT,
            kind TEXT NOT NULL CHECK (kind IN ('deleted', 'passwordChanged')),
            origin TEXT NOT NULL CHECK (origin IN ('admin', 'inband')),
            at BIGINT NOT NULL
        );
        CREATE INDEX account_changes_at ON account_changes(at);
        """

    /// Rosters with their versions and tombstones, unanswered subscription requests, offline
    /// messages, block lists.
    private static let instantMessaging = """
        CREATE TABLE roster_versions (
            account_id BIGINT PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
            version BIGINT NOT NULL,
            pruned_through BIGINT NOT NULL DEFAULT 0
        );
        CREATE TABLE roster_items (
            account_id BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
            contact TEXT COLLATE "C" NOT NULL,
            name TEXT,
            groups TEXT NOT NULL,
            subscription TEXT NOT NULL CHECK (subscription IN ('none', 'to', 'from', 'both')),
            ask_subscribe BOOLEAN NOT NULL,
            approved BOOLEAN NOT NULL,
            version BIGINT NOT NULL,
            PRIMARY KEY (account_id, contact)
        );
        CREATE INDEX roster_items_version ON roster_items(account_id, version);
        CREATE INDEX roster_items_contact ON roster_items(contact);
        CREATE TABLE roster_tombstones (
            account_id BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
            contact TEXT COLLATE "C" NOT NULL,
            version BIGINT NOT NULL,
            PRIMARY KEY (account_id, contact)
        );
        CREATE INDEX roster_tombstones_version ON roster_tombstones(account_id, version);
        CREATE TABLE roster_pending (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            account_id BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
            contact TEXT COLLATE "C" NOT NULL,
            stanza TEXT NOT NULL,
            received_at BIGINT NOT NULL,
            UNIQUE (account_id, contact)
        );
        CREATE TABLE offline_messages (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            account_id BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
            stanza TEXT NOT NULL,
            stored_at BIGINT NOT NULL
        );
        CREATE INDEX offline_messages_account ON offline_messages(account_id, id);
        CREATE TABLE blocked_jids (
            account_id BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
            jid TEXT COLLATE "C" NOT NULL,
            PRIMARY KEY (account_id, jid)
        );
        """

    /// The message archive (XEP-0313), one row per owner and message; `id` is the archive
    /// order. The indexes are those the SQLite archive has after its v16.
    private static let archive = """
        CREATE TABLE archive_messages (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            account_id BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
            with_bare TEXT NOT NULL,
            from_bare TEXT NOT NULL,
            from_jid TEXT NOT NULL,
            to_jid TEXT NOT NULL,
            stanza_id TEXT NOT NULL,
            origin_id TEXT,
            message_id TEXT,
            message_type TEXT,
            stanza TEXT,
            archived_at BIGINT NOT NULL,
            retracted_at BIGINT
        );
        CREATE INDEX archive_messages_account ON archive_messages(account_id, id);
        CREATE INDEX archive_messages_with ON archive_messages(account_id, with_bare, id);
        CREATE INDEX archive_messages_time ON archive_messages(account_id, archived_at);
        CREATE INDEX archive_messages_stanza_id ON archive_messages(account_id, stanza_id);
        CREATE INDEX archive_messages_origin_id ON archive_messages(account_id, origin_id) WHERE origin_id IS NOT NULL;
        CREATE INDEX archive_messages_sent ON archive_messages(account_id, from_bare, id) WHERE origin_id IS NOT NULL;
        CREATE TABLE archive_preferences (
            account_id BIGINT PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
            default_mode TEXT NOT NULL CHECK (default_mode IN ('always', 'never', 'roster'))
        );
        CREATE TABLE archive_preference_jids (
            account_id BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
            jid TEXT COLLATE "C" NOT NULL,
            archive BOOLEAN NOT NULL,
            PRIMARY KEY (account_id, jid)
        );
        """

    /// Personal eventing (XEP-0163): nodes with their configuration as JSON text, items in
    /// publication order (`seq`).
    private static let pep = """
        CREATE TABLE pep_nodes (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            account_id BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
            node TEXT COLLATE "C" NOT NULL,
            configuration TEXT NOT NULL,
            UNIQUE (account_id, node)
        );
        CREATE TABLE pep_items (
            seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            node_id BIGINT NOT NULL REFERENCES pep_nodes(id) ON DELETE CASCADE,
            item_id TEXT NOT NULL,
            payload TEXT NOT NULL,
            publisher TEXT NOT NULL,
            published_at BIGINT NOT NULL,
            UNIQUE (node_id, item_id)
        );
        CREATE INDEX pep_items_node ON pep_items(node_id, seq);
        """

    /// vCards (XEP-0054/0153), private XML (XEP-0049), last logout (XEP-0012).
    private static let profile = """
        CREATE TABLE vcards (
            account_id BIGINT PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
            vcard TEXT NOT NULL,
            photo_hash TEXT,
            updated_at BIGINT NOT NULL
        );
        CREATE TABLE private_xml (
            account_id BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
            namespace TEXT NOT NULL,
            name TEXT NOT NULL,
            xml TEXT NOT NULL,
            PRIMARY KEY (account_id, namespace, name)
        );
        CREATE TABLE last_activity (
            account_id BIGINT PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
            logged_out_at BIGINT NOT NULL,
            status TEXT
        );
        """

    /// Persistent rooms (XEP-0045) with their affiliations, vCards and registered nicks, and
    /// the rooms' archives (no foreign key to the rooms: temporary rooms are archived too).
    /// Who may send private messages in a stored room (muc#roomconfig_allowpm).
    private static let mucAllowPM = """
        ALTER TABLE muc_rooms ADD COLUMN allow_pm TEXT NOT NULL DEFAULT 'anyone';
        """

    /// As SQLite's v22: a query `with` a contact filters the owner's entries, read in order.
    private static let archiveWithoutWithIndex = """
        DROP INDEX IF EXISTS archive_entries_with;
        """

    /// A stored room's occupant limit (0: the service's) and whether members may invite to it.
    private static let mucRoomLimits = """
        ALTER TABLE muc_rooms ADD COLUMN max_occupants BIGINT NOT NULL DEFAULT 0;
        ALTER TABLE muc_rooms ADD COLUMN members_may_invite BOOLEAN NOT NULL DEFAULT false;
        """

    private static let muc = """
        CREATE TABLE muc_rooms (
            service TEXT COLLATE "C" NOT NULL,
            name TEXT COLLATE "C" NOT NULL,
            title TEXT NOT NULL,
            description TEXT NOT NULL,
            is_public BOOLEAN NOT NULL,
            whois TEXT NOT NULL,
            occupants_change_subject BOOLEAN NOT NULL,
            members_only BOOLEAN NOT NULL,
            moderated BOOLEAN NOT NULL DEFAULT false,
            archiving BOOLEAN NOT NULL DEFAULT true,
            password TEXT,
            subject TEXT,
            subject_from TEXT,
            occupant_id_key BYTEA NOT NULL,
            PRIMARY KEY (service, name)
        );
        CREATE TABLE muc_affiliations (
            service TEXT COLLATE "C" NOT NULL,
            room TEXT COLLATE "C" NOT NULL,
            jid TEXT COLLATE "C" NOT NULL,
            account_id BIGINT REFERENCES accounts(id) ON DELETE CASCADE,
            affiliation TEXT NOT NULL,
            nick TEXT,
            PRIMARY KEY (service, room, jid),
            FOREIGN KEY (service, room) REFERENCES muc_rooms(service, name) ON DELETE CASCADE
        );
        CREATE UNIQUE INDEX muc_affiliations_nick ON muc_affiliations(service, room, nick) WHERE nick IS NOT NULL;
        CREATE TABLE muc_vcards (
            service TEXT COLLATE "C" NOT NULL,
            room TEXT COLLATE "C" NOT NULL,
            vcard TEXT NOT NULL,
            photo_hash TEXT,
            PRIMARY KEY (service, room),
            FOREIGN KEY (service, room) REFERENCES muc_rooms(service, name) ON DELETE CASCADE
        );
        CREATE TABLE muc_archive (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            service TEXT COLLATE "C" NOT NULL,
            room TEXT COLLATE "C" NOT NULL,
            stanza_id TEXT NOT NULL,
            nick TEXT NOT NULL,
            account_id BIGINT REFERENCES accounts(id) ON DELETE SET NULL,
            sender_jid TEXT,
            stanza TEXT NOT NULL,
            archived_at BIGINT NOT NULL
        );
        CREATE INDEX muc_archive_room ON muc_archive(service, room, id);
        CREATE INDEX muc_archive_stanza_id ON muc_archive(service, room, stanza_id);
        CREATE INDEX muc_archive_account ON muc_archive(account_id) WHERE account_id IS NOT NULL;
        CREATE INDEX muc_archive_age ON muc_archive(archived_at);
        """

    /// XEP-0363 uploads' metadata; the files themselves stay on the HTTP service's disk.
    private static let uploads = """
        CREATE TABLE uploads (
            id TEXT COLLATE "C" PRIMARY KEY,
            account_id BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
            filename TEXT NOT NULL,
            size BIGINT NOT NULL CHECK (size >= 0),
            content_type TEXT NOT NULL,
            created_at BIGINT NOT NULL,
            state TEXT NOT NULL CHECK (state IN ('pending', 'uploading', 'stored'))
        );
        CREATE INDEX uploads_account ON uploads(account_id, created_at);
        CREATE INDEX uploads_created ON uploads(created_at);
        """

    /// A cluster of nodes on this database (ParleyCluster): each node's lease, the session
    /// directory (full JID to node, with what routing reads of its presence), and the nodes'
    /// inboxes of stanzas for their sessions. Nothing here outlives its node: a dead node's
    /// rows are removed (its inbox's messages moved to offline storage) by whoever notices.
    private static let cluster = """
        CREATE TABLE cluster_nodes (
            node_id TEXT COLLATE "C" PRIMARY KEY,
            incarnation BIGINT NOT NULL,
            started_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            heartbeat_at TIMESTAMPTZ NOT NULL DEFAULT now()
        );
        CREATE SEQUENCE cluster_session_versions;
        CREATE TABLE cluster_sessions (
            jid TEXT COLLATE "C" PRIMARY KEY,
            node_id TEXT COLLATE "C" NOT NULL,
            session_id BIGINT NOT NULL,
            account_id BIGINT,
            version BIGINT NOT NULL,
            available BOOLEAN NOT NULL,
            priority SMALLINT NOT NULL,
            flags INTEGER NOT NULL,
            notify TEXT NOT NULL DEFAULT '',
            presence TEXT
        );
        CREATE INDEX cluster_sessions_node ON cluster_sessions(node_id);
        CREATE TABLE cluster_inbox (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            node_id TEXT COLLATE "C" NOT NULL,
            target TEXT COLLATE "C" NOT NULL,
            kind SMALLINT NOT NULL,
            stanza TEXT NOT NULL,
            claimed BOOLEAN NOT NULL DEFAULT false,
            created_at BIGINT NOT NULL
        );
        CREATE INDEX cluster_inbox_node ON cluster_inbox(node_id, id)
        """

    /// Rooms of a cluster (hosted services' entities served by one node at a time): which
    /// node holds each room's lease, and who was in each room, so that a node taking a room
    /// over keeps its occupants. A lease is a node's for as long as the node's own: the node
    /// that takes a dead node over takes its rooms in the same transaction. Occupant rows
    /// outlive the lease on purpose (the next holder reads them); the holder removes them.
    private static let clusterRooms = """
        CREATE TABLE cluster_rooms (
            service TEXT COLLATE "C" NOT NULL,
            room TEXT COLLATE "C" NOT NULL,
            node_id TEXT COLLATE "C" NOT NULL,
            PRIMARY KEY (service, room)
        );
        CREATE INDEX cluster_rooms_node ON cluster_rooms(node_id);
        CREATE TABLE cluster_room_members (
            service TEXT COLLATE "C" NOT NULL,
            room TEXT COLLATE "C" NOT NULL,
            jid TEXT COLLATE "C" NOT NULL,
            node_id TEXT COLLATE "C" NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (service, room, jid)
        )
        """
}
