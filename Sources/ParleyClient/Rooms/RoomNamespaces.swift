/// The namespaces of multi-user chat (XEP-0045) and the XEPs a room client uses with it.
enum RoomNamespace {
    static let muc = "http://jabber.org/protocol/muc"
    static let user = "http://jabber.org/protocol/muc#user"
    static let owner = "http://jabber.org/protocol/muc#owner"
    static let admin = "http://jabber.org/protocol/muc#admin"
    static let roomConfig = "http://jabber.org/protocol/muc#roomconfig"
    /// XEP-0249 direct invitations.
    static let conference = "jabber:x:conference"
    /// XEP-0421: an occupant's stable, anonymous id within a room.
    static let occupantID = "urn:xmpp:occupant-id:0"
}

/// The XEP-0045 §15.6 status codes the client acts on.
enum RoomStatus {
    static let nonAnonymous = 100
    static let selfPresence = 110
    static let created = 201
    static let banned = 301
    static let nicknameChanged = 303
    static let kicked = 307
    static let removedByAffiliationChange = 321
    static let removedMembersOnly = 322
    static let removedShutdown = 332
}
