import ParleyCore

/// A room's settings (XEP-0045 §10.2, the `muc#roomconfig` form), with the defaults of an
/// instant room: temporary, public, open, unmoderated, semi-anonymous.
struct MUCRoomConfiguration: Sendable, Hashable {
    enum Whois: String, Sendable, Hashable {
        /// Only moderators see occupants' real JIDs (semi-anonymous).
        case moderators
        /// Every occupant sees them (non-anonymous).
        case anyone
    }

    /// Who may send private messages to other occupants (`muc#roomconfig_allowpm`), judged
    /// by the sender's role, as Prosody's mod_muc does; to oneself (another device of one's
    /// own account) is always allowed.
    enum PrivateMessages: String, Sendable, Hashable, CaseIterable {
        case anyone, participants, moderators
        case nobody = "none"

        /// The values of XEP-0045 §15.5.3, and Prosody's names for the same (the lowest role
        /// allowed; `everyone` from its older module).
        init?(formValue: String) {
            switch formValue {
            case "anyone", "visitor", "everyone": self = .anyone
            case "participants", "participant": self = .participants
            case "moderators", "moderator": self = .moderators
            case "none": self = .nobody
            default: return nil
            }
        }

        func allows(_ role: MUCRole) -> Bool {
            switch self {
            case .anyone: role != MUCRole.none
            case .participants: role == .participant || role == .moderator
            case .moderators: role == .moderator
            case .nobody: false
            }
        }
    }

    var name = ""
    var description = ""
    var persistent = false
    var isPublic = true
    var whois = Whois.moderators
    /// Whether participants, not only moderators, may change the subject.
    var occupantsMayChangeSubject = false
    /// Only members, admins and owners may enter (§7.2.6: `registration-required`).
    var membersOnly = false
    /// Entering takes this password (§7.2.5: `not-authorized` without it); nil: none.
    var password: String?
    /// Only participants and above speak; newcomers without affiliation are visitors and
    /// ask for voice (§7.13, §8.6).
    var moderated = false
    /// The room keeps an archive of its messages (XEP-0313), the source of its history.
    var archiving = true
    var privateMessages = PrivateMessages.anyone
    /// At most this many occupants (`muc#roomconfig_maxusers`); nil: as many as the service
    /// allows a room. Never above the service's limit; owners and admins enter a full room.
    var maxOccupants: Int?
    /// In a members-only room, members too may invite, and whom they invite becomes a member
    /// (`muc#roomconfig_allowinvites`, Prosody's `allowmemberinvites`); admins and owners
    /// always may. In an open room any occupant with voice invites, as in Prosody.
    var membersMayInvite = false

    static let formType = "http://jabber.org/protocol/muc#roomconfig"

    /// The occupant limits offered besides the service's own (§15.5.3's example).
    static let occupantLimitChoices = [10, 20, 30, 50, 100, 200, 500, 1000]
    /// Prosody's name for who may invite in a members-only room; read and written as an
    /// alias of `muc#roomconfig_allowinvites`.
    static let prosodyMemberInvitesField = "{http://prosody.im/protocol/muc}roomconfig_allowmemberinvites"

    /// The form an owner fills in (§10.2), with the current values; `serviceMaxOccupants`
    /// bounds the occupant limits offered.
    func form(serviceMaxOccupants: Int) -> XMLElement {
        var form = XMLElement("x", namespace: XMLNamespace.dataForms, ["type": "form"])
        form.append(XMLElement("title", text: "Room configuration"))
        form.append(Self.field("FORM_TYPE", type: "hidden", Self.formType))
        form.append(Self.field("muc#roomconfig_roomname", type: "text-single", label: "Name", name))
        form.append(Self.field("muc#roomconfig_roomdesc", type: "text-single", label: "Description", description))
        form.append(Self.field("muc#roomconfig_persistentroom", type: "boolean", label: "Persistent", persistent ? "1" : "0"))
        form.append(Self.field("muc#roomconfig_publicroom", type: "boolean", label: "Listed in the directory", isPublic ? "1" : "0"))
        form.append(
            Self.field(
                "muc#roomconfig_changesubject", type: "boolean", label: "Participants may change the subject",
                occupantsMayChangeSubject ? "1" : "0"))
        form.append(Self.field("muc#roomconfig_moderatedroom", type: "boolean", label: "Moderated", moderated ? "1" : "0"))
        form.append(Self.field("muc#roomconfig_membersonly", type: "boolean", label: "Members only", membersOnly ? "1" : "0"))
        form.append(
            Self.field(
                "muc#roomconfig_passwordprotectedroom", type: "boolean", label: "Password required", password != nil ? "1" : "0"))
        form.append(Self.field("muc#roomconfig_roomsecret", type: "text-private", label: "Password", password ?? ""))
        var whoisField = Self.field("muc#roomconfig_whois", type: "list-single", label: "Who may see real JIDs", whois.rawValue)
        for option in [Whois.moderators, .anyone] {
            whoisField.append(XMLElement("option", ["label": option.rawValue], [XMLElement("value", text: option.rawValue)]))
        }
        form.append(whoisField)
        var pmField = Self.field(
            "muc#roomconfig_allowpm", type: "list-single", label: "Who may send private messages", privateMessages.rawValue)
        for option in PrivateMessages.allCases {
            pmField.append(XMLElement("option", ["label": option.rawValue], [XMLElement("value", text: option.rawValue)]))
        }
        form.append(pmField)
        form.append(Self.field("muc#roomconfig_enablearchiving", type: "boolean", label: "Archive messages", archiving ? "1" : "0"))
        // XEP-0045's own name for it (status 170 says the room logs): clients that know only
        // this one (Smack) change the archive through it.
        form.append(Self.field("muc#roomconfig_enablelogging", type: "boolean", label: "Log messages", archiving ? "1" : "0"))
        var limitField = Self.field(
            "muc#roomconfig_maxusers", type: "list-single", label: "Maximum number of occupants",
            maxOccupants.map(String.init) ?? "none")
        var limits = Self.occupantLimitChoices.filter { $0 < serviceMaxOccupants } + [serviceMaxOccupants]
        if let maxOccupants, !limits.contains(maxOccupants) { limits = (limits + [maxOccupants]).sorted() }
        for limit in limits {
            limitField.append(XMLElement("option", ["label": String(limit)], [XMLElement("value", text: String(limit))]))
        }
        limitField.append(
            XMLElement("option", ["label": "The service's limit (\(serviceMaxOccupants))"], [XMLElement("value", text: "none")]))
        form.append(limitField)
        let invites = membersMayInvite ? "1" : "0"
        form.append(Self.field("muc#roomconfig_allowinvites", type: "boolean", label: "Members may invite others", invites))
        form.append(Self.field(Self.prosodyMemberInvitesField, type: "boolean", label: "Members may invite new members", invites))
        return form
    }

    /// Applies a submitted form; unknown fields are ignored (§10.2 lets services pick theirs),
    /// a wrong FORM_TYPE or a bad value is a `bad-request`, a value the service does not
    /// offer (a limit above `serviceMaxOccupants`) `not-acceptable`.
    mutating func apply(_ submitted: XMLElement, serviceMaxOccupants: Int) throws(StanzaError) {
        var changed = self
        var passwordProtected: Bool? = nil
        var secret = password ?? ""
        var archivingValues: [Bool] = []
        var inviteValues: [Bool] = []
        for field in submitted.children("field", namespace: XMLNamespace.dataForms) {
            let value = field.firstChild("value", namespace: XMLNamespace.dataForms)?.text ?? ""
            switch field[attribute: "var"] {
            case "FORM_TYPE":
                guard value == Self.formType else {
                    throw StanzaError(.badRequest, text: "The form's FORM_TYPE is not \(Self.formType).")
                }
            case "muc#roomconfig_roomname": changed.name = value
            case "muc#roomconfig_roomdesc": changed.description = value
            case "muc#roomconfig_persistentroom": changed.persistent = try Self.boolean(value, field: "persistentroom")
            case "muc#roomconfig_publicroom": changed.isPublic = try Self.boolean(value, field: "publicroom")
            case "muc#roomconfig_changesubject": changed.occupantsMayChangeSubject = try Self.boolean(value, field: "changesubject")
            case "muc#roomconfig_moderatedroom": changed.moderated = try Self.boolean(value, field: "moderatedroom")
            case "muc#roomconfig_membersonly": changed.membersOnly = try Self.boolean(value, field: "membersonly")
            case "muc#roomconfig_passwordprotectedroom": passwordProtected = try Self.boolean(value, field: "passwordprotectedroom")
            case "muc#roomconfig_roomsecret": secret = value
            case "muc#roomconfig_enablearchiving": archivingValues.append(try Self.boolean(value, field: "enablearchiving"))
            case "muc#roomconfig_enablelogging": archivingValues.append(try Self.boolean(value, field: "enablelogging"))
            case "muc#roomconfig_allowinvites": inviteValues.append(try Self.boolean(value, field: "allowinvites"))
            case Self.prosodyMemberInvitesField: inviteValues.append(try Self.boolean(value, field: "allowmemberinvites"))
            case "muc#roomconfig_maxusers": changed.maxOccupants = try Self.occupantLimit(value, serviceMaxOccupants: serviceMaxOccupants)
            case "muc#roomconfig_whois":
                guard let whois = Whois(rawValue: value) else {
                    throw StanzaError(.notAcceptable, text: "muc#roomconfig_whois is moderators or anyone, not '\(value)'.")
                }
                changed.whois = whois
            case "muc#roomconfig_allowpm":
                guard let allowed = PrivateMessages(formValue: value) else {
                    throw StanzaError(
                        .notAcceptable, text: "muc#roomconfig_allowpm is anyone, participants, moderators or none, not '\(value)'.")
                }
                changed.privateMessages = allowed
            default: continue
            }
        }
        guard changed.name.utf8.count <= 256, changed.description.utf8.count <= 1024, secret.utf8.count <= 256 else {
            throw StanzaError(.notAcceptable, text: "A room name is at most 256 bytes, a description 1024, a password 256.")
        }
        changed.archiving = Self.changedValue(among: archivingValues, current: archiving)
        changed.membersMayInvite = Self.changedValue(among: inviteValues, current: membersMayInvite)
        if passwordProtected == true, secret.isEmpty {
            throw StanzaError(.notAcceptable, text: "A password-protected room needs a muc#roomconfig_roomsecret.")
        }
        // A form with a secret and no passwordprotectedroom field (Prosody reads only the
        // secret) means a password when the secret is not empty.
        let protected = passwordProtected ?? !secret.isEmpty
        changed.password = protected ? secret : nil
        self = changed
    }

    /// `none` (or empty) is the service's limit, kept as nil so the room follows the
    /// operator's setting when it changes.
    private static func occupantLimit(_ value: String, serviceMaxOccupants: Int) throws(StanzaError) -> Int? {
        if value.isEmpty || value == "none" { return nil }
        guard let limit = Int(value), limit > 0 else {
            throw StanzaError(.badRequest, text: "muc#roomconfig_maxusers is a number of occupants or 'none', not '\(value)'.")
        }
        guard limit <= serviceMaxOccupants else {
            throw StanzaError(
                .notAcceptable, text: "muc#roomconfig_maxusers is at most \(serviceMaxOccupants) on this service, not \(limit).")
        }
        return limit
    }

    /// Two fields for one setting (XEP-0045's name and another server's): a client that
    /// returns the whole form sends both, and the one that differs from the current value is
    /// the change.
    private static func changedValue(among values: [Bool], current: Bool) -> Bool {
        values.first { $0 != current } ?? current
    }

    private static func boolean(_ value: String, field: String) throws(StanzaError) -> Bool {
        switch value {
        case "1", "true": return true
        case "0", "false": return false
        default: throw StanzaError(.badRequest, text: "muc#roomconfig_\(field) is a boolean, not '\(value)'.")
        }
    }

    private static func field(_ name: String, type: String, label: String? = nil, _ value: String) -> XMLElement {
        var field = XMLElement("field", ["var": name, "type": type])
        if let label { field.setAttribute("label", label) }
        field.append(XMLElement("value", text: value))
        return field
    }
}
