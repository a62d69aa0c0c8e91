import Foundation

/// One message to archive in one user's archive (XEP-0313), as `archive(_:)` takes it.
///
/// A message between two local accounts is archived twice, once per archive: the two entries
/// share one `ArchiveEntry.Body` (everything but the owner and the other party), so making,
/// queueing and writing them copies and retains two strings each instead of eleven (the
/// copies' reference counting was ~4 % of a message's CPU with the defaults; bench/README.md).
public struct ArchiveEntry: Sendable, Hashable {
    /// The archive's owner: a canonical username.
    public var owner: String
    /// The bare JID of the other party.
    public var with: String
    public var body: Body

    /// What every archive holding a message keeps of it.
    public final class Body: Sendable, Hashable {
        /// The stamped sender, and the addressee as the message named it.
        public let from: String
        public let to: String
        /// The XEP-0359 stanza-id the server gave the message (unique within the owner's archive).
        public let stanzaID: String
        /// The sender's XEP-0359 origin-id, if it gave one.
        public let originID: String?
        /// The message's `id` and `type` attributes, kept for its tombstone should it be retracted.
        public let messageID: String?
        public let messageType: String?
        public let stanza: String
        public let archivedAt: Date
        /// An XEP-0424 retraction: the stanza-id or origin-id of an earlier message from the
        /// same sender, whose archived copies (in both archives) are tombstoned.
        public let retracts: String?

        public init(
            from: String, to: String, stanzaID: String, originID: String?, messageID: String? = nil,
            messageType: String? = nil, stanza: String, archivedAt: Date, retracts: String? = nil
        ) {
            self.from = from
            self.to = to
            self.stanzaID = stanzaID
            self.originID = originID
            self.messageID = messageID
            self.messageType = messageType
            self.stanza = stanza
            self.archivedAt = archivedAt
            self.retracts = retracts
        }

        public static func == (lhs: Body, rhs: Body) -> Bool {
            lhs === rhs
                || (lhs.stanzaID == rhs.stanzaID && lhs.stanza == rhs.stanza && lhs.from == rhs.from && lhs.to == rhs.to
                    && lhs.originID == rhs.originID && lhs.messageID == rhs.messageID && lhs.messageType == rhs.messageType
                    && lhs.archivedAt == rhs.archivedAt && lhs.retracts == rhs.retracts)
        }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(stanzaID)
            hasher.combine(stanza)
            hasher.combine(archivedAt)
        }
    }

    public init(owner: String, with: String, body: Body) {
        self.owner = owner
        self.with = with
        self.body = body
    }

    public init(
        owner: String, with: String, from: String, to: String, stanzaID: String, originID: String?,
        messageID: String? = nil, messageType: String? = nil, stanza: String, archivedAt: Date, retracts: String? = nil
    ) {
        self.init(
            owner: owner, with: with,
            body: Body(
                from: from, to: to, stanzaID: stanzaID, originID: originID, messageID: messageID, messageType: messageType,
                stanza: stanza, archivedAt: archivedAt, retracts: retracts))
    }

    public var from: String { body.from }
    public var to: String { body.to }
    public var stanzaID: String { body.stanzaID }
    public var originID: String? { body.originID }
    public var messageID: String? { body.messageID }
    public var messageType: String? { body.messageType }
    public var stanza: String { body.stanza }
    public var archivedAt: Date { body.archivedAt }
    public var retracts: String? { body.retracts }

    /// Another archive's copy of the same message: everything but the owner and the other
    /// party is the same, so both archives can share one body.
    public func isCopy(of other: ArchiveEntry) -> Bool {
        body == other.body
    }
}

extension Array where Element == ArchiveEntry {
    /// The runs of entries that share one body, in order: a message followed by its copies
    /// for other archives (a copy for an archive already in the run starts a new one).
    public func sharedBodyRuns() -> [Range<Int>] {
        var runs: [Range<Int>] = []
        var start = startIndex
        while start < endIndex {
            var end = start + 1
            while end < endIndex, self[end].isCopy(of: self[start]),
                !self[start..<end].contains(where: { $0.owner == self[end].owner })
            {
                end += 1
            }
            runs.append(start..<end)
            start = end
        }
        return runs
    }
}
