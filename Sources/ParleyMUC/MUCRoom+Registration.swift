import ParleyCore

/// Registering with a room (XEP-0045 §7.10): a `jabber:iq:register` get returns the
/// `muc#register` form, or says the user is registered; a submitted form makes the user a
/// member (when it was nobody) and reserves its nickname, which nobody else may then use
/// (§7.12); `<remove/>` (XEP-0077 §3.2) gives both up again. Only the nickname is kept: the
/// other fields are optional and nothing reads them, so the service stores no one's name,
/// address or e-mail.
extension MUCRoom {
    static let registerFormType = "http://jabber.org/protocol/muc#register"
    static let registerNamespace = "jabber:iq:register"
    /// The longest value of a form field other than the nickname, in bytes.
    static let maxRegistrationFieldBytes = 1024

    func reservedNick(of account: JID) -> String? { reservedNicks[account.bare] }

    func reservationHolder(of nick: String) -> JID? {
        reservedNicks.first { $0.value == nick }?.key
    }

    /// What a registration get is answered with.
    func registrationQuery(for session: JID, policy: MUCNicknamePolicy) throws(StanzaError) -> XMLElement {
        try checkMayRegister(session, policy: policy)
        var query = XMLElement("query", namespace: Self.registerNamespace)
        if let nick = reservedNick(of: session) {
            // §7.10: a registered user gets <registered/>, with the nickname (XEP-0077 §3.1).
            query.append(XMLElement("registered", namespace: Self.registerNamespace))
            query.append(XMLElement("username", namespace: Self.registerNamespace, text: nick))
            return query
        }
        query.append(XMLElement("instructions", namespace: Self.registerNamespace, text: "Choose the nickname to reserve in \(jid)."))
        query.append(registrationForm)
        return query
    }

    /// Handles a registration set; returns whether affiliations or reservations changed
    /// (a persistent room stores them) and the sessions an affiliation change removed.
    mutating func register(
        _ query: XMLElement, from session: JID, policy: MUCNicknamePolicy, out: inout [XMLElement]
    ) throws(StanzaError) -> AdminOutcome {
        try checkMayRegister(session, policy: policy)
        let account = session.bare
        var outcome = AdminOutcome()
        if query.firstChild("remove", namespace: Self.registerNamespace) != nil {
            guard reservedNick(of: account) != nil || affiliation(of: account) == .member else {
                throw StanzaError(.itemNotFound, text: "You are not registered with this room.")
            }
            reservedNicks[account] = nil
            outcome.affiliationsChanged = true
            // As Prosody: giving up the registration gives up membership, not a higher standing.
            if affiliation(of: account) == .member {
                outcome.removedSessions = setAffiliation(.none, of: account, actor: nil, reason: "Registration cancelled", out: &out)
            }
            return outcome
        }
        let nick = try Self.submittedNick(query, maxBytes: policy.maxBytes)
        if let occupant = occupant(nick), occupant.account != account {
            throw StanzaError(.conflict, text: "The nickname '\(nick)' is in use in this room.")
        }
        if let holder = reservationHolder(of: nick), holder != account {
            throw StanzaError(.conflict, text: "The nickname '\(nick)' is already reserved in this room.")
        }
        if policy.enforceRegistered {
            // As Prosody: with registered nicknames enforced, the account's occupants under
            // another nickname are kicked (307) before the reservation takes effect.
            for occupant in occupants.values.sorted(by: { $0.nick < $1.nick }) where occupant.account == account && occupant.nick != nick {
                outcome.removedSessions += removeOccupant(
                    occupant, statuses: [.kicked], actor: nil, reason: "You registered the nickname '\(nick)' in this room.", out: &out)
            }
        }
        reservedNicks[account] = nick
        outcome.affiliationsChanged = true
        if affiliation(of: account) == .none {
            outcome.removedSessions += setAffiliation(.member, of: account, actor: nil, reason: nil, out: &out)
        }
        return outcome
    }

    /// §7.12: the reserved nickname as the name of an identity; an empty query if none.
    func reservedNickInfo(for session: JID) -> XMLElement {
        var query = XMLElement("query", namespace: XMLNamespace.discoInfo, ["node": "x-roomuser-item"])
        if let nick = reservedNick(of: session) {
            query.append(XMLElement("identity", namespace: XMLNamespace.discoInfo, ["category": "conference", "type": "text", "name": nick]))
        }
        return query
    }

    /// §7.10: banned users are `forbidden`; others who may not register are `not-allowed`.
    private func checkMayRegister(_ session: JID, policy: MUCNicknamePolicy) throws(StanzaError) {
        let affiliation = affiliation(of: session)
        if affiliation == .outcast { throw StanzaError(.forbidden, text: "You are banned from this room.") }
        guard affiliation == .none else { return }
        if policy.registration == .affiliated {
            throw StanzaError(.notAllowed, text: "Only the room's members, admins and owners may register with it.")
        }
        if configuration.membersOnly {
            throw StanzaError(.notAllowed, text: "This room is members-only: an admin adds its members.")
        }
    }

    /// The form of §7.10 (example 76): the nickname is required, the rest optional.
    private var registrationForm: XMLElement {
        func field(_ name: String, _ type: String, _ label: String, required: Bool = false) -> XMLElement {
            var field = XMLElement("field", namespace: XMLNamespace.dataForms, ["var": name, "type": type, "label": label])
            if required { field.append(XMLElement("required", namespace: XMLNamespace.dataForms)) }
            return field
        }
        var hidden = XMLElement("field", namespace: XMLNamespace.dataForms, ["var": "FORM_TYPE", "type": "hidden"])
        hidden.append(XMLElement("value", namespace: XMLNamespace.dataForms, text: Self.registerFormType))
        let name = configuration.name.isEmpty ? jid.localpart ?? jid.description : configuration.name
        return XMLElement(
            "x", namespace: XMLNamespace.dataForms, ["type": "form"],
            [
                XMLElement("title", namespace: XMLNamespace.dataForms, text: "\(name) registration"),
                XMLElement("instructions", namespace: XMLNamespace.dataForms, text: "Reserve a nickname in this room."),
                hidden,
                field("muc#register_first", "text-single", "First name"),
                field("muc#register_last", "text-single", "Last name"),
                field("muc#register_roomnick", "text-single", "Desired nickname", required: true),
                field("muc#register_url", "text-single", "Your URL"),
                field("muc#register_email", "text-single", "Email address"),
                field("muc#register_faqentry", "text-multi", "FAQ entry"),
            ])
    }

    /// The nickname of a submitted form, prepared as a resourcepart; a missing or wrong
    /// form, or a bad nickname, is a `bad-request` (§7.10), an oversized field
    /// `not-acceptable`.
    private static func submittedNick(_ query: XMLElement, maxBytes: Int) throws(StanzaError) -> String {
        guard let form = query.firstChild("x", namespace: XMLNamespace.dataForms), form[attribute: "type"] == "submit" else {
            throw StanzaError(.badRequest, text: "Registration with a room takes the submitted muc#register form.")
        }
        var nick: String?
        for field in form.children("field", namespace: XMLNamespace.dataForms) {
            let value = field.firstChild("value", namespace: XMLNamespace.dataForms)?.text ?? ""
            switch field[attribute: "var"] {
            case "FORM_TYPE":
                guard value == registerFormType else {
                    throw StanzaError(.badRequest, text: "The form's FORM_TYPE is not \(registerFormType).")
                }
            case "muc#register_roomnick": nick = value
            default:
                guard value.utf8.count <= maxRegistrationFieldBytes else {
                    throw StanzaError(.notAcceptable, text: "A registration field holds at most \(maxRegistrationFieldBytes) bytes.")
                }
            }
        }
        guard let nick, !nick.isEmpty else {
            throw StanzaError(.badRequest, text: "muc#register_roomnick, the nickname to reserve, is required.")
        }
        guard let prepared = try? JID(localpart: "room", domainpart: "example.org", resourcepart: nick).resourcepart,
            prepared.utf8.count <= maxBytes, prepared.unicodeScalars.contains(where: { !$0.properties.isWhitespace })
        else {
            throw StanzaError(.badRequest, text: "'\(nick)' is not a valid nickname (at most \(maxBytes) bytes, not blank).")
        }
        return prepared
    }
}
