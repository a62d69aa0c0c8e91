import Foundation

/// A message read back from an archive.
public struct ArchivedMessage: Sendable, Hashable {
    /// Archive order (server order): increases with every insert, never reused.
    public var position: Int64
    public var stanzaID: String
    public var originID: String?
    /// The message's `id` and `type` attributes (nil for messages archived before they were kept).
    public var messageID: String?
    public var messageType: String?
    public var from: String
    public var to: String
    /// Nil once the message was retracted (a tombstone).
    public var stanza: String?
    public var archivedAt: Date
    public var retractedAt: Date?

    public init(
        position: Int64, stanzaID: String, originID: String?, messageID: String? = nil, messageType: String? = nil,
        from: String, to: String, stanza: String?, archivedAt: Date, retractedAt: Date?
    ) {
        self.position = position
        self.stanzaID = stanzaID
        self.originID = originID
        self.messageID = messageID
        self.messageType = messageType
        self.from = from
        self.to = to
        self.stanza = stanza
        self.archivedAt = archivedAt
        self.retractedAt = retractedAt
    }
}

/// What an archive query selects (XEP-0313 form fields) and which page of it (XEP-0059).
public struct ArchiveQuery: Sendable, Hashable {
    /// A bare JID matches every message with that contact; a full JID only those from or to
    /// exactly that address.
    public var with: String?
    public var withIsFull: Bool
    public var start: Date?
    public var end: Date?
    /// XEP-0313 §4.1.3.3 (`urn:xmpp:mam:2#extended`): only messages after (before) the one
    /// with this stanza-id. Unlike `after`/`before` these filter, so `count` reflects them.
    public var afterID: String?
    public var beforeID: String?
    /// Only the messages with these stanza-ids (the `ids` field); an unknown id matches nothing.
    public var ids: [String]?
    /// Messages after the one with this stanza-id.
    public var after: String?
    /// Messages before the one with this stanza-id; an empty string asks for the last page.
    public var before: String?
    public var max: Int

    public init(
        with: String? = nil, withIsFull: Bool = false, start: Date? = nil, end: Date? = nil, after: String? = nil,
        before: String? = nil, max: Int = 50
    ) {
        self.with = with
        self.withIsFull = withIsFull
        self.start = start
        self.end = end
        self.after = after
        self.before = before
        self.max = max
    }
}

public struct ArchivePage: Sendable, Hashable {
    /// Oldest first, whichever way the page was asked for.
    public var messages: [ArchivedMessage]
    /// The page reaches the end of the result set in the direction asked (XEP-0313 §4.3).
    public var complete: Bool
    /// How many messages match the filters, all pages together.
    public var count: Int
    /// The position of the page's first message within the whole result set.
    public var firstIndex: Int?

    public init(messages: [ArchivedMessage], complete: Bool, count: Int, firstIndex: Int?) {
        self.messages = messages
        self.complete = complete
        self.count = count
        self.firstIndex = firstIndex
    }
}

/// A message a user sent with an XEP-0359 origin-id, as read back from the user's archive.
public struct SentOriginID: Sendable, Hashable {
    /// The bare JID it was sent to.
    public var to: String
    public var originID: String

    public init(to: String, originID: String) {
        self.to = to
        self.originID = originID
    }
}

/// XEP-0313 archiving preferences.
public struct ArchivePreferences: Sendable, Hashable {
    public enum Default: String, Sendable, Hashable {
        case always, never, roster
    }
    public var defaultMode: Default
    /// Bare JIDs always (never) archived, whatever the default.
    public var always: [String]
    public var never: [String]

    public init(defaultMode: Default = .always, always: [String] = [], never: [String] = []) {
        self.defaultMode = defaultMode
        self.always = always
        self.never = never
    }
}

/// Per-user message archives (XEP-0313). Users are canonical usernames.
public protocol ArchiveStore: Sendable {
    /// Stores the entries in the given order, in one transaction: positions increase in that
    /// order. Entries for an unknown user, or that the owner's preferences exclude, are
    /// skipped; a retraction tombstones its target in both archives. Each touched archive
    /// is then cut to its newest `maxPerUser` messages, if given.
    func archive(_ entries: [ArchiveEntry], maxPerUser: Int?) async throws

    /// Throws `StorageError.itemNotFound` if `after` or `before` names no message of the
    /// user's archive.
    func queryArchive(user: String, _ query: ArchiveQuery) async throws -> ArchivePage

    /// The newest `limit` messages with an origin-id that `user` sent (from `bareJID`, its own
    /// address) still in its archive, newest first; empty for an unknown user.
    func recentOriginIDs(of user: String, sentAs bareJID: String, limit: Int) async throws -> [SentOriginID]

    /// The defaults (always, no lists) for a user who never set any.
    func archivePreferences(of user: String) async throws -> ArchivePreferences

    /// Throws `StorageError.accountNotFound`.
    func setArchivePreferences(_ preferences: ArchivePreferences, of user: String) async throws

    /// Deletes every archived message older than `date`; returns how many.
    @discardableResult
    func pruneArchive(before date: Date) async throws -> Int
}
