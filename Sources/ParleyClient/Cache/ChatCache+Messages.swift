import Foundation
import GRDB
import ParleyCore

/// A message as the cache keeps it.
public struct StoredMessage: Sendable, Equatable {
    public enum Direction: String, Sendable { case incoming, outgoing }

    /// How far an outgoing message got, in the order it gets there.
    public enum DeliveryState: Int, Sendable, Comparable {
        /// Kept here; the server has not confirmed it yet.
        case pending = 0
        /// The server took responsibility for it (XEP-0198 acknowledgement).
        case sent = 1
        /// The recipient's client confirmed it (XEP-0184 receipt).
        case delivered = 2
        /// The recipient's client showed it (XEP-0333 displayed marker).
        case read = 3

        public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// Position in the cache.
    public var rowID: Int64
    /// The other party (bare JID).
    public var peer: JID
    public var direction: Direction
    /// The message's `id` attribute (ours: also its origin id, and what receipts name).
    public var id: String?
    /// The id our server's archive gave it (XEP-0359 stanza-id), once known.
    public var archiveID: String?
    /// Empty once retracted.
    public var body: String
    /// When it was sent: the server's delay stamp if it was stored offline, else when it arrived.
    public var timestamp: Date
    /// Meaningful for outgoing messages; incoming ones are `.pending`.
    public var state: DeliveryState
    /// The sender took it back (XEP-0424).
    public var retracted: Bool
    /// The archive listed it, so its place in the conversation is the server's order, the
    /// same on every device; until then it sorts after every confirmed message.
    public var confirmedByArchive: Bool
    /// In a room: the sender's nickname (ours for our own messages); nil in one-to-one chats.
    public var nick: String? = nil
    /// The file a media message shares.
    public var media: MediaAttachment?

    /// For outgoing messages: a delivery receipt (or a read marker) came back.
    public var delivered: Bool { state >= .delivered }
}

/// One entry of the conversation list.
public struct Conversation: Sendable, Equatable {
    public var peer: JID
    public var lastMessage: StoredMessage?
    public var unreadCount: Int
    /// A group chat (XEP-0045): `peer` is the room.
    public var isRoom = false
}

/// What the client writes for a sent or received message.
struct MessageRecord: Sendable {
    var peer: JID
    var direction: StoredMessage.Direction
    var id: String?
    var originID: String? = nil
    var stanzaID: String? = nil
    var body: String
    var timestamp: Date
    var media: MediaAttachment? = nil
}

extension ChatCache {
    /// The order of a conversation: the archive's order for what it confirmed, then the rest
    /// in the order this device learnt of them.
    static let conversationOrder = "archive_position IS NULL, archive_position, id"
    static let reverseConversationOrder = "archive_position IS NULL DESC, archive_position DESC, id DESC"

    /// Stores a message unless it is already there, judged by any id it carries (server stanza
    /// id, origin id, then message id — the same message comes back after a reconnect, from
    /// offline storage or from the archive). Returns false for a duplicate. An incoming
    /// message counts as unread.
    func store(_ record: MessageRecord) async throws -> Bool {
        try await database.write { db in
            if try Self.existingRow(peer: record.peer, outgoing: record.direction == .outgoing, ids: record, db) != nil { return false }
            try Self.insert(record, archivePosition: nil, state: .pending, retracted: false, db)
            return true
        }
    }

    /// Stores a message another of our devices sent (a carbon copy): the server has it, and
    /// it is not unread. Returns false for a duplicate.
    func storeSentElsewhere(_ record: MessageRecord) async throws -> Bool {
        try await database.write { db in
            if try Self.existingRow(peer: record.peer, outgoing: true, ids: record, db) != nil { return false }
            try Self.insert(record, archivePosition: nil, state: .sent, retracted: false, db)
            return true
        }
    }

    static func existingRow(peer: JID, outgoing: Bool, ids record: MessageRecord, _ db: Database) throws -> Int64? {
        guard record.stanzaID != nil || record.originID != nil || record.id != nil else { return nil }
        return try Int64.fetchOne(
            db,
            sql: """
                SELECT id FROM message WHERE peer = ?
                    AND (stanza_id = ? OR (outgoing = ? AND (origin_id = ? OR message_id = ?)))
                LIMIT 1
                """,
            arguments: [peer.bare.description, record.stanzaID, outgoing, record.originID ?? record.id, record.id ?? record.originID])
    }

    @discardableResult
    static func insert(
        _ record: MessageRecord, archivePosition: Int64?, state: StoredMessage.DeliveryState, retracted: Bool, _ db: Database
    ) throws -> Int64 {
        let peer = record.peer.bare.description
        let outgoing = record.direction == .outgoing
        try db.execute(
            sql: """
                INSERT INTO message (peer, outgoing, message_id, origin_id, stanza_id, body, sent_at, state, archive_position, retracted,
                    acknowledged, media)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                peer, outgoing, record.id, record.originID, record.stanzaID, record.body, record.timestamp.timeIntervalSince1970,
                state.rawValue, archivePosition, retracted, outgoing && state >= .sent, record.media.flatMap(Self.encodeMedia),
            ])
        let row = db.lastInsertedRowID
        try db.execute(
            sql: """
                INSERT INTO conversation (peer, unread) VALUES (?, ?)
                ON CONFLICT (peer) DO UPDATE SET unread = unread + excluded.unread
                """,
            arguments: [peer, outgoing || retracted ? 0 : 1])
        return row
    }

    /// The server has taken the outgoing message `id` to `peer`: it is at least sent. Returns
    /// whether this is news — once per message, whatever the order in which its
    /// acknowledgement, receipt and read marker arrive.
    func acknowledge(id: String, peer: JID) async throws -> Bool {
        try await database.write { db in try Self.acknowledge(id: id, peer: peer, db) }
    }

    static func acknowledge(id: String, peer: JID, _ db: Database) throws -> Bool {
        try db.execute(
            sql: """
                UPDATE message SET acknowledged = 1, state = MAX(state, ?)
                WHERE peer = ? AND outgoing = 1 AND (message_id = ? OR origin_id = ?) AND acknowledged = 0
                """,
            arguments: [StoredMessage.DeliveryState.sent.rawValue, peer.bare.description, id, id])
        return db.changesCount > 0
    }

    /// Moves the outgoing message `id` to `peer` forward to `state` (never back). Returns
    /// whether it changed.
    @discardableResult
    func advance(id: String, peer: JID, to state: StoredMessage.DeliveryState) async throws -> Bool {
        try await database.write { db in try Self.advance(id: id, peer: peer, to: state, db) }
    }

    static func advance(id: String, peer: JID, to state: StoredMessage.DeliveryState, _ db: Database) throws -> Bool {
        try db.execute(
            sql: "UPDATE message SET state = ? WHERE peer = ? AND outgoing = 1 AND (message_id = ? OR origin_id = ?) AND state < ?",
            arguments: [state.rawValue, peer.bare.description, id, id, state.rawValue])
        return db.changesCount > 0
    }

    /// A displayed marker for `id` means everything we sent before it was read too
    /// (XEP-0333 §3.2). Returns whether anything changed.
    func markReadUpTo(id: String, peer: JID) async throws -> Bool {
        try await database.write { db in try Self.markReadUpTo(id: id, peer: peer, db) }
    }

    static func markReadUpTo(id: String, peer: JID, _ db: Database) throws -> Bool {
        let bare = peer.bare.description
        guard
            let target = try Row.fetchOne(
                db, sql: "SELECT id, archive_position FROM message WHERE peer = ? AND outgoing = 1 AND (message_id = ? OR origin_id = ?)",
                arguments: [bare, id, id])
        else { return false }
        let position: Int64? = target["archive_position"]
        let row: Int64 = target["id"]
        // At or before it in the conversation's order: unconfirmed rows sort after confirmed ones.
        try db.execute(
            sql: """
                UPDATE message SET state = ? WHERE peer = ? AND outgoing = 1 AND state < ?
                    AND (id = ? OR (? IS NOT NULL AND archive_position <= ?)
                        OR (? IS NULL AND (archive_position IS NOT NULL OR id <= ?)))
                """,
            arguments: [StoredMessage.DeliveryState.read.rawValue, bare, StoredMessage.DeliveryState.read.rawValue, row, position, position, position, row])
        return db.changesCount > 0
    }

    /// Marks the message `id` from `sender` (`outgoing`: from us) retracted and forgets its
    /// text. Returns whether there was such a message not yet retracted.
    func retract(id: String, peer: JID, outgoing: Bool) async throws -> Bool {
        try await database.write { db in try Self.retract(id: id, peer: peer, outgoing: outgoing, db) }
    }

    static func retract(id: String, peer: JID, outgoing: Bool, _ db: Database) throws -> Bool {
        try db.execute(
            sql: """
                UPDATE message SET retracted = 1, body = '' WHERE peer = ? AND outgoing = ? AND retracted = 0
                    AND (origin_id = ? OR message_id = ?)
                """,
            arguments: [peer.bare.description, outgoing, id, id])
        return db.changesCount > 0
    }

    /// Conversations, the most recently active first.
    public func conversations() async throws -> [Conversation] {
        try await database.read { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT c.peer AS peer, c.unread AS unread, c.is_room AS is_room, m.*
                FROM conversation c
                LEFT JOIN message m ON m.id = (
                    SELECT id FROM message WHERE peer = c.peer ORDER BY \(Self.reverseConversationOrder) LIMIT 1)
                ORDER BY m.sent_at DESC, m.id DESC
                """)
            return rows.compactMap { row -> Conversation? in
                guard let peer = try? JID(row["peer"] as String) else { return nil }
                let last: StoredMessage? = (row["id"] as Int64?) == nil ? nil : Self.message(row)
                return Conversation(peer: peer, lastMessage: last, unreadCount: row["unread"], isRoom: row["is_room"])
            }
        }
    }

    /// The last `limit` messages with `peer`, oldest first, in the archive's order.
    public func history(with peer: JID, limit: Int = 100) async throws -> [StoredMessage] {
        try await database.read { db in
            let rows = try Row.fetchAll(
                db, sql: "SELECT * FROM message WHERE peer = ? ORDER BY \(Self.reverseConversationOrder) LIMIT ?",
                arguments: [peer.bare.description, limit])
            return rows.reversed().compactMap(Self.message)
        }
    }

    public func unreadCount(with peer: JID) async throws -> Int {
        try await database.read { db in
            try Int.fetchOne(db, sql: "SELECT unread FROM conversation WHERE peer = ?", arguments: [peer.bare.description]) ?? 0
        }
    }

    /// The user has seen the conversation with `peer`.
    public func markRead(_ peer: JID) async throws {
        try await database.write { db in
            try db.execute(sql: "UPDATE conversation SET unread = 0 WHERE peer = ?", arguments: [peer.bare.description])
        }
    }

    /// Messages we wrote that no server has acknowledged, oldest first: what a previous run of
    /// the program left unsent (or unconfirmed) when it ended.
    func unacknowledgedOutgoing() async throws -> [(peer: JID, id: String, body: String, media: MediaAttachment?)] {
        try await database.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT peer, COALESCE(origin_id, message_id) AS stanza_key, body, media FROM message
                    WHERE outgoing = 1 AND acknowledged = 0 AND retracted = 0 AND COALESCE(origin_id, message_id) IS NOT NULL
                        AND nick IS NULL
                    ORDER BY message.id
                    """
            ).compactMap { row in
                guard let peer = try? JID(row["peer"] as String) else { return nil }
                return (peer, row["stanza_key"], row["body"], Self.decodeMedia(row["media"]))
            }
        }
    }

    /// The id of the last message `peer` sent us that is not retracted: what a displayed
    /// marker names.
    func lastIncomingID(from peer: JID) async throws -> String? {
        try await database.read { db in
            try String.fetchOne(
                db,
                sql: """
                    SELECT COALESCE(message_id, origin_id) FROM message
                    WHERE peer = ? AND outgoing = 0 AND retracted = 0 AND COALESCE(message_id, origin_id) IS NOT NULL
                    ORDER BY \(Self.reverseConversationOrder) LIMIT 1
                    """,
                arguments: [peer.bare.description])
        }
    }

    public func message(id: String) async throws -> StoredMessage? {
        try await database.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM message WHERE message_id = ? OR origin_id = ? ORDER BY id DESC LIMIT 1", arguments: [id, id])
                .flatMap(Self.message)
        }
    }

    static func message(_ row: Row) -> StoredMessage? {
        guard let peer = try? JID(row["peer"] as String) else { return nil }
        return StoredMessage(
            rowID: row["id"], peer: peer, direction: (row["outgoing"] as Bool) ? .outgoing : .incoming,
            id: row["message_id"] ?? row["origin_id"], archiveID: row["stanza_id"], body: row["body"],
            timestamp: Date(timeIntervalSince1970: row["sent_at"]),
            state: StoredMessage.DeliveryState(rawValue: row["state"]) ?? .pending, retracted: row["retracted"],
            confirmedByArchive: (row["archive_position"] as Int64?) != nil, nick: row["nick"],
            media: (row["retracted"] as Bool) ? nil : Self.decodeMedia(row["media"]) ?? MediaAttachment(bodyURL: row["body"]))
    }

    static func encodeMedia(_ media: MediaAttachment) -> String? {
        (try? JSONEncoder().encode(media)).map { String(decoding: $0, as: UTF8.self) }
    }

    static func decodeMedia(_ text: String?) -> MediaAttachment? {
        text.flatMap { try? JSONDecoder().decode(MediaAttachment.self, from: Data($0.utf8)) }
    }
}
