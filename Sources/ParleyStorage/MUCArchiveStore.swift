import Foundation

/// One groupchat message to keep in a room's archive (XEP-0313 on the room JID). A room's
/// archive is its own, apart from the accounts' archives: it belongs to the room and goes
/// with it.
public struct MUCArchiveEntry: Sendable, Hashable {
    /// The service's domain and the room's localpart.
    public var service: String
    public var room: String
    /// The room's XEP-0359 stanza-id, the message's id in the archive.
    public var stanzaID: String
    /// The nickname it was sent under.
    public var nick: String
    /// The sender's account when it is one of this server's (the link goes when the account
    /// does), else its bare JID.
    public var senderUsername: String?
    public var senderJID: String?
    /// The message as occupants got it, without `to`.
    public var stanza: String
    public var archivedAt: Date

    public init(
        service: String, room: String, stanzaID: String, nick: String, senderUsername: String?, senderJID: String?, stanza: String,
        archivedAt: Date
    ) {
        self.service = service
        self.room = room
        self.stanzaID = stanzaID
        self.nick = nick
        self.senderUsername = senderUsername
        self.senderJID = senderJID
        self.stanza = stanza
        self.archivedAt = archivedAt
    }
}

/// A message read back from a room's archive.
public struct MUCArchivedMessage: Sendable, Hashable {
    /// Archive order: increases with every insert, never reused.
    public var position: Int64
    public var stanzaID: String
    public var nick: String
    /// The sender's bare JID: `username@serverDomain` for a local account that still
    /// exists, the stored JID for others, nil once the local account is gone.
    public var senderUsername: String?
    public var senderJID: String?
    public var stanza: String
    public var archivedAt: Date

    public init(
        position: Int64, stanzaID: String, nick: String, senderUsername: String?, senderJID: String?, stanza: String, archivedAt: Date
    ) {
        self.position = position
        self.stanzaID = stanzaID
        self.nick = nick
        self.senderUsername = senderUsername
        self.senderJID = senderJID
        self.stanza = stanza
        self.archivedAt = archivedAt
    }
}

/// What a room archive query selects and which page of it (XEP-0313 with XEP-0059).
public struct MUCArchiveQuery: Sendable, Hashable {
    /// Only messages sent under this nickname.
    public var nick: String?
    /// Only messages sent by this local account, or this other bare JID.
    public var senderUsername: String?
    public var senderJID: String?
    public var start: Date?
    public var end: Date?
    /// Messages after (before) the one with this stanza-id; an empty `before` asks for the
    /// last page.
    public var after: String?
    public var before: String?
    public var max: Int
    /// XEP-0313 `#extended`: only messages after (before) the one with this stanza-id,
    /// as filters that the count respects, unlike the page bounds above.
    public var afterID: String?
    public var beforeID: String?
    /// Only the messages with these stanza-ids; an unknown id matches nothing.
    public var ids: [String]?

    public init(max: Int) {
        self.max = max
    }
}

public struct MUCArchivePage: Sendable, Hashable {
    /// Oldest first, whichever way the page was asked for.
    public var messages: [MUCArchivedMessage]
    /// The page reaches the end of the result set in the direction asked.
    public var complete: Bool
    /// How many messages match the filters, all pages together.
    public var count: Int

    public init(messages: [MUCArchivedMessage], complete: Bool, count: Int) {
        self.messages = messages
        self.complete = complete
        self.count = count
    }
}

/// Where a MUC service keeps its rooms' archives.
public protocol MUCArchiveStore: Sendable {
    /// Stores the entries in order, in one transaction; each touched room is then cut to its
    /// newest `maxPerRoom` messages, if given.
    func appendMUCArchive(_ entries: [MUCArchiveEntry], maxPerRoom: Int?) async throws

    /// `appendMUCArchive` on the caller's thread, for a writer with a thread of its own (never
    /// an event loop or the concurrency pool).
    func appendMUCArchiveBlocking(_ entries: [MUCArchiveEntry], maxPerRoom: Int?) throws

    /// Throws `StorageError.itemNotFound` if `after` or `before` names no message of the room.
    func queryMUCArchive(service: String, room: String, _ query: MUCArchiveQuery) async throws -> MUCArchivePage

    /// The newest `limit` messages of each room of `service`, oldest first: the history a
    /// restarted service offers newcomers.
    func mucArchiveTails(service: String, limit: Int) async throws -> [String: [MUCArchivedMessage]]

    /// Deletes one room's archive (the room was destroyed or, temporary, is gone).
    func deleteMUCArchive(service: String, room: String) async throws

    /// Deletes the archives of the rooms of `service` that are not stored: temporary rooms a
    /// stopped process did not get to close.
    func deleteUnstoredMUCArchives(service: String) async throws

    /// Deletes every room message older than `date`; returns how many.
    @discardableResult
    func pruneMUCArchive(before date: Date) async throws -> Int
}

extension MUCArchiveStore {
    /// Waits for the `async` one. A store that can write synchronously (SQLite) does so
    /// instead, which saves the writer a hop to another thread and back per batch.
    public func appendMUCArchiveBlocking(_ entries: [MUCArchiveEntry], maxPerRoom: Int?) throws {
        try waitingForAsync { try await self.appendMUCArchive(entries, maxPerRoom: maxPerRoom) }
    }
}
