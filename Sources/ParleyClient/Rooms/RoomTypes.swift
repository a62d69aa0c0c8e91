import Foundation
import ParleyCore

/// A role in a room (XEP-0045 §5.1): what an occupant may do now.
public enum RoomRole: String, Sendable, CaseIterable {
    case moderator, participant, visitor, none
}

/// An affiliation with a room (XEP-0045 §5.2): a lasting relation of an account to it.
public enum RoomAffiliation: String, Sendable, CaseIterable {
    case owner, admin, member, outcast, none
}

/// Someone in a room, as its presence describes them.
public struct RoomOccupant: Sendable, Equatable {
    public var nick: String
    public var role: RoomRole
    public var affiliation: RoomAffiliation
    /// Their account, when the room lets us see it (non-anonymous rooms, or as a moderator).
    public var realJID: JID?
    /// XEP-0421: stable across nickname changes and rejoins, when the room assigns one.
    public var occupantID: String?
    public var show: PresenceUpdate.Show
    public var status: String?

    public init(
        nick: String, role: RoomRole, affiliation: RoomAffiliation, realJID: JID? = nil, occupantID: String? = nil,
        show: PresenceUpdate.Show = .available, status: String? = nil
    ) {
        self.nick = nick
        self.role = role
        self.affiliation = affiliation
        self.realJID = realJID
        self.occupantID = occupantID
        self.show = show
        self.status = status
    }
}

/// A message in a room, or a private message from one of its occupants.
public struct RoomMessage: Sendable, Equatable {
    public var room: JID
    /// The sender's nickname; nil for a message from the room itself.
    public var nick: String?
    public var body: String
    public var id: String?
    /// The room's id for it (XEP-0359 stanza-id by the room): what its archive knows it by.
    public var stanzaID: String?
    public var occupantID: String?
    /// When it was sent, for discussion history and archive results (XEP-0203); else nil.
    public var delayedUntil: Date?
    /// Sent by us (our nickname, or the echo of a message we sent).
    public var isOwn: Bool
    /// Its text names our nickname in the room.
    public var mentionsMe: Bool
    /// The file it shares (XEP-0066 link, XEP-0446 metadata), as for one-to-one messages.
    public var media: MediaAttachment?

    public init(
        room: JID, nick: String?, body: String, id: String? = nil, stanzaID: String? = nil, occupantID: String? = nil,
        delayedUntil: Date? = nil, isOwn: Bool = false, mentionsMe: Bool = false, media: MediaAttachment? = nil
    ) {
        self.media = media
        self.room = room
        self.nick = nick
        self.body = body
        self.id = id
        self.stanzaID = stanzaID
        self.occupantID = occupantID
        self.delayedUntil = delayedUntil
        self.isOwn = isOwn
        self.mentionsMe = mentionsMe
    }

    /// Discussion history the room replayed, or an archive result: not news.
    public var isHistory: Bool { delayedUntil != nil }
}

/// An invitation to a room: mediated by the room (XEP-0045 §7.8.2) or sent directly by the
/// inviter (XEP-0249).
public struct RoomInvitation: Sendable, Equatable {
    public var room: JID
    /// Who invites: their bare JID, or their occupant JID when the room hides real JIDs.
    public var from: JID
    public var reason: String?
    public var password: String?
    /// XEP-0249: there is no decline to send back.
    public var isDirect: Bool

    public init(room: JID, from: JID, reason: String? = nil, password: String? = nil, isDirect: Bool) {
        self.room = room
        self.from = from
        self.reason = reason
        self.password = password
        self.isDirect = isDirect
    }
}

/// Why an occupant (we, or someone else) is no longer in a room.
public enum RoomRemoval: Sendable, Equatable {
    /// 307, with the moderator's nickname and reason when given.
    case kicked(by: String?, reason: String?)
    /// 301.
    case banned(by: String?, reason: String?)
    /// 321: an affiliation change took away the right to be there.
    case affiliationChanged
    /// 322: the room became members-only.
    case membersOnly
    /// 332: the service is shutting down.
    case serviceShutdown
    /// The owner destroyed the room, maybe pointing to another one (XEP-0045 §10.9).
    case destroyed(reason: String?, alternateVenue: JID?)
}

/// How much discussion history to get on entry (XEP-0045 §7.2.14); nil fields ask nothing.
public struct RoomHistoryRequest: Sendable, Equatable {
    public var maxStanzas: Int?
    public var maxChars: Int?
    public var seconds: Int?
    public var since: Date?

    public init(maxStanzas: Int? = nil, maxChars: Int? = nil, seconds: Int? = nil, since: Date? = nil) {
        self.maxStanzas = maxStanzas
        self.maxChars = maxChars
        self.seconds = seconds
        self.since = since
    }

    /// No history at all (§7.2.14 example: maxchars='0').
    public static let none = RoomHistoryRequest(maxChars: 0)
}

/// A room we are in.
public struct JoinedRoom: Sendable, Equatable {
    public var jid: JID
    public var nick: String
    public var subject: String?
    public var occupants: [RoomOccupant]
    /// This join created the room (status 201).
    public var created: Bool
}

/// One field of a room's configuration form (XEP-0004, `muc#roomconfig`).
public struct RoomFormField: Sendable, Equatable {
    public var name: String
    public var type: String?
    public var label: String?
    public var values: [String]
    /// For list fields: the choices, as (label, value).
    public var options: [String]
}

/// A page of a room's archive (XEP-0313 on the room JID), oldest first.
public struct RoomArchivePage: Sendable, Equatable {
    public var messages: [RoomMessage]
    /// The RSM ids of the first and last results, to ask for the page before or after.
    public var first: String?
    public var last: String?
    /// The archive has nothing further in the direction asked.
    public var complete: Bool
}

/// A room the service lists (disco#items, XEP-0045 §6.3).
public struct PublicRoom: Sendable, Equatable {
    public var jid: JID
    public var name: String?

    public init(jid: JID, name: String? = nil) {
        self.jid = jid
        self.name = name
    }
}
