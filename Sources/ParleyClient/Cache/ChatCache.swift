import Foundation
import GRDB
import ParleyCore

/// One account's local copy of its roster (with the XEP-0237 version it matches), its
/// conversations and their messages, in one SQLite file. It makes the app usable before the
/// server answers, lets a reconnect fetch only roster changes, and gives the conversation list
/// and unread counts without a server round trip.
///
/// Every access goes through GRDB's own serial writer queue and async APIs, so nothing here
/// runs on (or blocks) a NIO event loop.
public final class ChatCache: Sendable {
    let database: DatabaseQueue

    /// Opens (creating if needed) the cache at `path`.
    public init(path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        database = try DatabaseQueue(path: path, configuration: configuration)
        try Self.migrator.migrate(database)
    }

    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);
                CREATE TABLE contact (
                    jid TEXT PRIMARY KEY NOT NULL,
                    name TEXT,
                    groups TEXT NOT NULL DEFAULT '[]',
                    subscription TEXT NOT NULL,
                    ask INTEGER NOT NULL DEFAULT 0);
                CREATE TABLE message (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    peer TEXT NOT NULL,
                    outgoing INTEGER NOT NULL,
                    message_id TEXT,
                    origin_id TEXT,
                    stanza_id TEXT,
                    body TEXT NOT NULL,
                    sent_at DOUBLE NOT NULL,
                    delivered INTEGER NOT NULL DEFAULT 0);
                CREATE INDEX message_by_time ON message (peer, sent_at, id);
                CREATE INDEX message_by_id ON message (peer, message_id);
                CREATE INDEX message_by_origin ON message (peer, origin_id);
                CREATE INDEX message_by_stanza_id ON message (peer, stanza_id);
                CREATE TABLE conversation (peer TEXT PRIMARY KEY NOT NULL, unread INTEGER NOT NULL DEFAULT 0);
                """)
        }
        // Delivery state (sent, delivered, read), retraction, and the archive's order: rows the
        // archive has confirmed get increasing positions in the order the archive lists them.
        migrator.registerMigration("v2") { db in
            try db.execute(sql: """
                ALTER TABLE message ADD COLUMN state INTEGER NOT NULL DEFAULT 0;
                UPDATE message SET state = CASE WHEN delivered = 1 THEN 2 WHEN outgoing = 1 THEN 1 ELSE 0 END;
                ALTER TABLE message ADD COLUMN archive_position INTEGER;
                ALTER TABLE message ADD COLUMN retracted INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE message ADD COLUMN acknowledged INTEGER NOT NULL DEFAULT 0;
                UPDATE message SET acknowledged = 1 WHERE outgoing = 1 AND state >= 1;
                CREATE INDEX message_in_order ON message (peer, archive_position, id);
                CREATE INDEX message_by_archive_position ON message (archive_position);
                """)
        }
        // Contacts' profiles (XEP-0172 nickname, XEP-0084 avatar, XEP-0054 vCard names and
        // XEP-0153 photo) with the hashes they match, so a restart fetches nothing it has;
        // avatars by hash, shared by whoever uses the same picture.
        migrator.registerMigration("v3-profiles") { db in
            try db.execute(sql: """
                CREATE TABLE profile (
                    jid TEXT PRIMARY KEY NOT NULL,
                    nickname TEXT,
                    avatar_hash TEXT,
                    vcard_photo_hash TEXT,
                    vcard_full_name TEXT,
                    vcard_nickname TEXT);
                CREATE TABLE avatar (hash TEXT PRIMARY KEY NOT NULL, type TEXT NOT NULL, data BLOB NOT NULL);
                """)
        }
        registerRoomMigration(&migrator)
        // Media messages (XEP-0066 link with XEP-0446 metadata), as JSON: the conversation
        // shows what a file is, and an unacknowledged one is sent again with its metadata.
        migrator.registerMigration("v5-media") { db in
            try db.execute(sql: "ALTER TABLE message ADD COLUMN media TEXT")
        }
        return migrator
    }

    // MARK: Roster

    /// The cached roster and the version it matches (nil when never fetched with versioning).
    public func roster() async throws -> (contacts: [Contact], version: String?) {
        try await database.read { db in
            let version = try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'roster_ver'")
            let contacts = try Row.fetchAll(db, sql: "SELECT * FROM contact ORDER BY jid").compactMap(Self.contact)
            return (contacts, version)
        }
    }

    /// Replaces the whole roster, as after a full roster result.
    func replaceRoster(_ contacts: [Contact], version: String?) async throws {
        try await database.write { db in
            try db.execute(sql: "DELETE FROM contact")
            for contact in contacts { try Self.upsert(contact, db) }
            try Self.setVersion(version, db)
        }
    }

    /// Applies one roster push: `contact` added or changed, or `removed` gone.
    func applyRosterPush(upsert contact: Contact?, remove removed: JID?, version: String?) async throws {
        try await database.write { db in
            if let contact { try Self.upsert(contact, db) }
            if let removed { try db.execute(sql: "DELETE FROM contact WHERE jid = ?", arguments: [removed.description]) }
            // A push without a version leaves us unsure what we have: forget the version so the
            // next login fetches the whole roster.
            try Self.setVersion(version, db)
        }
    }

    private static func setVersion(_ version: String?, _ db: Database) throws {
        if let version {
            try db.execute(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('roster_ver', ?)", arguments: [version])
        } else {
            try db.execute(sql: "DELETE FROM meta WHERE key = 'roster_ver'")
        }
    }

    private static func upsert(_ contact: Contact, _ db: Database) throws {
        let groups = String(decoding: try JSONEncoder().encode(contact.groups), as: UTF8.self)
        try db.execute(
            sql: "INSERT OR REPLACE INTO contact (jid, name, groups, subscription, ask) VALUES (?, ?, ?, ?, ?)",
            arguments: [contact.jid.description, contact.name, groups, contact.subscription.rawValue, contact.awaitingApproval])
    }

    private static func contact(_ row: Row) -> Contact? {
        guard let jid = try? JID(row["jid"] as String) else { return nil }
        let groupsText: String = row["groups"]
        let groups = (try? JSONDecoder().decode([String].self, from: Data(groupsText.utf8))) ?? []
        return Contact(
            jid: jid, name: row["name"], groups: groups,
            subscription: Contact.Subscription(rawValue: row["subscription"]) ?? .none, awaitingApproval: row["ask"])
    }
}
