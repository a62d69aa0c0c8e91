/// The namespaces of multi-user chat (XEP-0045) and the XEPs rooms use with it.
enum MUCNamespace {
    static let muc = "http://jabber.org/protocol/muc"
    static let user = "http://jabber.org/protocol/muc#user"
    static let owner = "http://jabber.org/protocol/muc#owner"
    static let admin = "http://jabber.org/protocol/muc#admin"
    static let roomConfig = "http://jabber.org/protocol/muc#roomconfig"
    static let roomInfo = "http://jabber.org/protocol/muc#roominfo"
    /// XEP-0421: an occupant's stable, anonymous id within a room.
    static let occupantID = "urn:xmpp:occupant-id:0"
    /// XEP-0410 §3.3: the room answers an occupant's ping to its own occupant JID itself.
    static let selfPingOptimization = "http://jabber.org/protocol/muc#self-ping-optimization"
}

/// The status codes of XEP-0045 §15.6 that the service sends.
enum MUCStatus: Int, Sendable {
    /// Any occupant may see real JIDs (a non-anonymous room), on entry.
    case nonAnonymous = 100
    /// This presence refers to the recipient itself.
    case selfPresence = 110
    /// The room is logged (public archive).
    case logged = 170
    /// The room was created by this join.
    case created = 201
    /// The occupant was banned.
    case banned = 301
    /// The occupant changed its nickname.
    case nicknameChanged = 303
    /// The occupant was kicked.
    case kicked = 307

    // Registration, voice, configuration changes and removals (MUCRoom+Affiliations,
    // MUCRoom+ConfigurationChanges, MUCService+Shutdown).
    /// Told to a user not in the room: its affiliation changed.
    case affiliationChangedAway = 101
    /// A configuration change that does not touch privacy.
    case configurationChanged = 104
    /// The room now shows real JIDs to everyone.
    case nowNonAnonymous = 172
    /// The room now shows real JIDs to moderators only.
    case nowSemiAnonymous = 173
    /// The room stopped keeping an archive (a configuration change).
    case loggingDisabled = 171
    /// The service assigned or changed the occupant's nickname.
    case nickAssigned = 210
    /// Removed because an affiliation change took the right to be in the room.
    case removedByAffiliation = 321
    /// Removed because the room became members-only.
    case removedMembersOnly = 322
    /// Removed because the service is shutting down.
    case systemShutdown = 332
    /// Removed because of a technical problem (its node of a cluster died).
    case technicalRemoval = 333
}
