import Foundation
import GRDB
import ParleyCore

/// A message as the cache keeps it.
public struct StoredMessage: Sendable, Equatable {
    public enum Direction: String, Sendable { case incoming, outgoing }
    /// Position in the cache; later messages of a conversation at the same time sort after.
    public var rowID: Int64
    /// The other party (bare JID).
    public var peer: JID
    public var direction: Direction
    /// The message's `id` attribute (ours: also its origin id, and what receipts name).
    public var id: String?
    public var body: String
    /// When it was sent: the server's delay stamp if it was stored offline, else when it arrived.
    public var timestamp: Date
    /// For outgoing messages: a delivery receipt came back.
    public var delivered: Bool
}

/// One entry of the conversation list.
public struct Conversation: Sendable, Equatable {
    public var peer: JID
    public var lastMessage: StoredMessage?
    public var unreadCount: Int
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
}

extension ChatCache {
    /// Stores a message unless it is already there, judged by any id it carries (server stanza
    /// id, origin id, then message id — the same message comes back after a reconnect or from
    /// offline storage). Returns false for a duplicate. An incoming message counts as unread.
    func store(_ record: MessageRecord) async throws -> Bool {
        try await database.write { db in
            let peer = record.peer.bare.description
            let outgoing = record.direction == .outgoing
            if record.stanzaID != nil || record.originID != nil || record.id != nil {
                let duplicate = try Bool.fetchOne(
                    db,
                    sql: """
                        SELECT EXISTS (SELECT 1 FROM message WHERE peer = ? AND outgoing = ?
                            AND (stanza_id = ? OR origin_id = ? OR message_id = ?))
                        """,
                    arguments: [peer, outgoing, record.stanzaID, record.originID, record.id]) ?? false
                if duplicate { return false }
            }
            try db.execute(
                sql: """
                    INSERT INTO message (peer, outgoing, message_id, origin_id, stanza_id, body, sent_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [peer, outgoing, record.id, record.originID, record.stanzaID, record.body, record.timestamp.timeIntervalSince1970])
            try db.execute(
                sql: """
                    INSERT INTO conversation (peer, unread) VALUES (?, ?)
                    ON CONFLICT (peer) DO UPDATE SET unread = unread + excluded.unread
                    """,
                arguments: [peer, outgoing ? 0 : 1])
            return true
        }
    }

    /// Records a delivery receipt for the outgoing message `id` to `peer`.
    func markDelivered(id: String, peer: JID) async throws {
        try await database.write { db in
            try db.execute(
                sql: "UPDATE message SET delivered = 1 WHERE peer = ? AND outgoing = 1 AND (message_id = ? OR origin_id = ?)",
                arguments: [peer.bare.description, id, id])
        }
    }

    /// Conversations, the most recently active first.
    public func conversations() async throws -> [Conversation] {
        try await database.read { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT c.peer AS peer, c.unread AS unread, m.*
                FROM conversation c
                LEFT JOIN message m ON m.id = (
                    SELECT id FROM message WHERE peer = c.peer ORDER BY sent_at DESC, id DESC LIMIT 1)
                ORDER BY m.sent_at DESC, m.id DESC
                """)
            return rows.compactMap { row -> Conversation? in
                guard let peer = try? JID(row["peer"] as String) else { return nil }
                let last: StoredMessage? = (row["id"] as Int64?) == nil ? nil : Self.message(row)
                return Conversation(peer: peer, lastMessage: last, unreadCount: row["unread"])
            }
        }
    }

    /// The last `limit` messages with `peer`, oldest first.
    public func history(with peer: JID, limit: Int = 100) async throws -> [StoredMessage] {
        try await database.read { db in
            let rows = try Row.fetchAll(
                db, sql: "SELECT * FROM message WHERE peer = ? ORDER BY sent_at DESC, id DESC LIMIT ?",
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

    private static func message(_ row: Row) -> StoredMessage? {
        guard let peer = try? JID(row["peer"] as String) else { return nil }
        return StoredMessage(
            rowID: row["id"], peer: peer, direction: (row["outgoing"] as Bool) ? .outgoing : .incoming,
            id: row["message_id"], body: row["body"], timestamp: Date(timeIntervalSince1970: row["sent_at"]),
            delivered: row["delivered"])
    }
}
