import Foundation
import GRDB
import ParleyCore

/// One message of our server-side archive (XEP-0313), as the cache needs it.
struct ArchiveItem: Sendable {
    /// The archive's id for it (the result's `id`, the XEP-0359 stanza-id by our account).
    var archiveID: String
    var outgoing: Bool
    var peer: JID
    var id: String?
    var originID: String?
    var body: String?
    var timestamp: Date
    /// The archive keeps only a XEP-0424 tombstone: the sender retracted it.
    var isTombstone = false
    /// The origin id of the message this one retracts.
    var retracts: String?
    /// The message this one is a delivery receipt for.
    var receiptFor: String?
    /// The message this one marks displayed.
    var displayed: String?
}

extension ChatCache {
    /// Where the last catch-up stopped: the id of the last archived message seen, and
    /// whether the cache has been caught up at all (a fresh cache starts from the archive's
    /// beginning).
    func archiveCursor() async throws -> (caughtUp: Bool, lastID: String?) {
        try await database.read { db in
            let caughtUp = try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'archive_caught_up'") != nil
            let last = try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'archive_last_id'")
            return (caughtUp, last)
        }
    }

    /// Forgets the position (the archive no longer has that id: trimmed by its retention).
    func resetArchiveCursor() async throws {
        try await database.write { db in
            try db.execute(sql: "DELETE FROM meta WHERE key IN ('archive_caught_up', 'archive_last_id')")
        }
    }

    /// Applies one page of archive results, in the archive's order, and moves the cursor to
    /// `lastID` — in one transaction, so a crash cannot leave one without the other. Returns
    /// the events the application has not seen yet (messages missed while away, state
    /// changes, retractions).
    func applyArchivePage(_ items: [ArchiveItem], lastID: String?) async throws -> [ClientEvent] {
        try await database.write { db in
            var events: [ClientEvent] = []
            var next = (try Int64.fetchOne(db, sql: "SELECT MAX(archive_position) FROM message") ?? 0) + 1
            for item in items {
                if let target = item.retracts {
                    if try Self.retract(id: target, peer: item.peer, outgoing: item.outgoing, db) {
                        events.append(.retracted(messageID: target, peer: item.peer, bySelf: item.outgoing))
                    }
                    continue
                }
                if let receipt = item.receiptFor, !item.outgoing, try Self.advance(id: receipt, peer: item.peer, to: .delivered, db) {
                    events.append(.delivered(messageID: receipt, by: item.peer))
                }
                if let marker = item.displayed, !item.outgoing, try Self.markReadUpTo(id: marker, peer: item.peer, db) {
                    events.append(.displayed(messageID: marker, by: item.peer))
                }
                guard item.body != nil || item.isTombstone else { continue }
                let record = MessageRecord(
                    peer: item.peer, direction: item.outgoing ? .outgoing : .incoming, id: item.id, originID: item.originID,
                    stanzaID: item.archiveID, body: item.body ?? "", timestamp: item.timestamp)
                if let row = try Self.existingRow(peer: item.peer, outgoing: item.outgoing, ids: record, db) {
                    try Self.confirm(row: row, item: item, position: next, events: &events, db)
                    if db.changesCount > 0 { next += 1 }
                    continue
                }
                try Self.insert(record, archivePosition: next, state: item.outgoing ? .sent : .pending, retracted: item.isTombstone, db)
                next += 1
                if !item.outgoing, !item.isTombstone, let body = item.body {
                    events.append(.message(ChatMessage(id: item.id, from: item.peer, to: nil, body: body, delayedUntil: item.timestamp)))
                }
            }
            if let lastID {
                try db.execute(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('archive_last_id', ?)", arguments: [lastID])
            }
            try db.execute(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('archive_caught_up', '1')")
            return events
        }
    }

    /// A message this device already has: the archive fixes its place (once; a second copy
    /// in the archive does not move it) and its stanza id, and vouches that the server has it.
    private static func confirm(row: Int64, item: ArchiveItem, position: Int64, events: inout [ClientEvent], _ db: Database) throws {
        if item.outgoing, let id = item.originID ?? item.id, try acknowledge(id: id, peer: item.peer, db) {
            events.append(.sent(messageID: id))
        }
        if item.isTombstone {
            try db.execute(sql: "UPDATE message SET retracted = 1, body = '' WHERE id = ?", arguments: [row])
        }
        // Last, so the caller can tell from the change count whether the position was used.
        try db.execute(
            sql: "UPDATE message SET archive_position = ?, stanza_id = COALESCE(stanza_id, ?) WHERE id = ? AND archive_position IS NULL",
            arguments: [position, item.archiveID, row])
    }
}
