/// A persistent multi-user chat room (XEP-0045) as stored: its configuration, subject and
/// affiliations. Temporary rooms are never stored.
public struct StoredMUCRoom: Sendable, Hashable {
    public struct Affiliation: Sendable, Hashable {
        /// The bare JID affiliated.
        public var jid: String
        /// The local account's username when the JID is one of this server's accounts: the
        /// row goes with the account.
        public var username: String?
        /// owner, admin, member or outcast.
        public var affiliation: String
        /// The nickname reserved by registering with the room (XEP-0045 §7.10).
        public var nick: String?

        public init(jid: String, username: String?, affiliation: String, nick: String? = nil) {
            self.jid = jid
            self.username = username
            self.affiliation = affiliation
            self.nick = nick
        }
    }

    /// The service's domain and the room's localpart.
    public var service: String
    public var name: String
    public var title: String
    public var description: String
    public var isPublic: Bool
    /// moderators or anyone (who may see real JIDs).
    public var whois: String
    public var occupantsMayChangeSubject: Bool
    public var membersOnly: Bool
    /// The password to enter, if the room has one.
    public var password: String?
    public var subject: String?
    /// Who set the subject (an occupant JID, or the room's).
    public var subjectFrom: String?
    /// Keys the room's XEP-0421 occupant ids, so they survive a restart.
    public var occupantIDKey: [UInt8]
    public var affiliations: [Affiliation]
    /// Only participants and above speak (muc#roomconfig_moderatedroom).
    public var moderated = false
    /// Whether the room keeps an archive of its messages (XEP-0313).
    public var archiving = true
    /// Who may send private messages (muc#roomconfig_allowpm): anyone, participants,
    /// moderators or none.
    public var allowPrivateMessages = "anyone"
    /// At most this many occupants (muc#roomconfig_maxusers); 0: the service's limit.
    public var maxOccupants = 0
    /// Whether members too may invite to a members-only room (muc#roomconfig_allowinvites).
    public var membersMayInvite = false
    /// The room's vCard (its avatar), as XML text, and the XEP-0153 hash of its photo.
    public var vCard: String?
    public var photoHash: String?

    public init(
        service: String, name: String, title: String, description: String, isPublic: Bool, whois: String,
        occupantsMayChangeSubject: Bool, membersOnly: Bool = false, password: String? = nil, subject: String?, subjectFrom: String?, occupantIDKey: [UInt8], affiliations: [Affiliation]
    ) {
        self.service = service
        self.name = name
        self.title = title
        self.description = description
        self.isPublic = isPublic
        self.whois = whois
        self.occupantsMayChangeSubject = occupantsMayChangeSubject
        self.membersOnly = membersOnly
        self.password = password
        self.subject = subject
        self.subjectFrom = subjectFrom
        self.occupantIDKey = occupantIDKey
        self.affiliations = affiliations
    }
}

/// Where a MUC service keeps its persistent rooms.
public protocol MUCRoomStore: Sendable {
    /// Every stored room of `service`.
    func mucRooms(of service: String) async throws -> [StoredMUCRoom]
    /// Writes the room and replaces its affiliations, in one transaction. An affiliation
    /// naming a local account that no longer exists is left out.
    func saveMUCRoom(_ room: StoredMUCRoom) async throws
    func deleteMUCRoom(service: String, name: String) async throws
}
