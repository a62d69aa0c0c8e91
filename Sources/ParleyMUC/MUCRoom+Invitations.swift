import ParleyCore

/// Mediated invitations (XEP-0045 §7.8.2) and their declines (§7.8.2 example 59): the room
/// passes them on, so the invitee learns the room and who invited it, and the inviter who
/// declined. Each carries a body too, so a client that knows nothing of MUC shows it and an
/// offline invitee finds it in offline storage.
extension MUCRoom {
    static let maxInvitations = 20

    /// Passes the invitations and declines in `x` on. In a members-only room only admins and
    /// owners invite, members too when `membersMayInvite`, and an invitee without
    /// affiliation becomes a member (§7.8.2, as Prosody); returns whether anyone did, so a
    /// persistent room saves its list.
    mutating func relayInvitations(_ x: XMLElement, from session: JID, out: inout [XMLElement]) throws(StanzaError) -> Bool {
        let invites = x.children("invite", namespace: MUCNamespace.user)
        let declines = x.children("decline", namespace: MUCNamespace.user)
        guard !invites.isEmpty || !declines.isEmpty else {
            throw StanzaError(.featureNotImplemented, text: "Only invitations and declines are supported in messages to the room.")
        }
        guard invites.count + declines.count <= Self.maxInvitations else {
            throw StanzaError(.policyViolation, text: "At most \(Self.maxInvitations) invitations in one message.")
        }
        // Every address is checked before anything is sent or changed.
        let invitees = try invites.map { invite throws(StanzaError) in (invite, try Self.addressee(invite)) }
        let declined = try declines.map { decline throws(StanzaError) in (decline, try Self.addressee(decline)) }
        let inviterNick = invitees.isEmpty ? nil : try mayInvite(session)
        var madeMembers = false
        for (invite, recipient) in invitees {
            let reason = invite.firstChild("reason", namespace: MUCNamespace.user)?.text
            if configuration.membersOnly, affiliation(of: recipient) == .none {
                // Not present (a member-only room has no one without affiliation), so this
                // only tells the invitee and those who see real JIDs.
                _ = setAffiliation(.member, of: recipient, actor: inviterNick, reason: "Invited by \(session.bare)", out: &out)
                madeMembers = true
            }
            var item = XMLElement("invite", namespace: MUCNamespace.user, ["from": session.bare.description])
            if let reason { item.append(XMLElement("reason", text: reason)) }
            let text = "\(session.bare) invites you to the room \(jid)" + (reason.map { ": \($0)" } ?? ".")
            // §7.8.2: the invitee needs the password to enter.
            let password = configuration.password.map { XMLElement("password", namespace: MUCNamespace.user, text: $0) }
            out.append(notice(item, to: recipient, body: text, password: password))
        }
        for (decline, recipient) in declined {
            let reason = decline.firstChild("reason", namespace: MUCNamespace.user)?.text
            var item = XMLElement("decline", namespace: MUCNamespace.user, ["from": session.bare.description])
            if let reason { item.append(XMLElement("reason", text: reason)) }
            let text = "\(session.bare) declined your invitation to the room \(jid)" + (reason.map { ": \($0)" } ?? ".")
            out.append(notice(item, to: recipient, body: text, password: nil))
        }
        return madeMembers
    }

    /// The inviter's nickname if `session` may invite: an occupant with voice, and in a
    /// members-only room an admin or owner, or a member when the owners allow it.
    private func mayInvite(_ session: JID) throws(StanzaError) -> String {
        guard let nick = nick(of: session), let inviter = occupant(nick) else {
            throw StanzaError(.notAcceptable, text: "Only occupants may invite others to this room; join it first.")
        }
        guard inviter.role != .visitor else {
            throw StanzaError(.forbidden, text: "Visitors may not invite others to this room; ask for voice first.")
        }
        guard configuration.membersOnly else { return nick }
        switch affiliation(of: session) {
        case .owner, .admin: return nick
        case .member where configuration.membersMayInvite: return nick
        default:
            throw StanzaError(.forbidden, text: "Only the room's admins and owners may invite others to this members-only room.")
        }
    }

    private func notice(_ item: XMLElement, to recipient: JID, body: String, password: XMLElement?) -> XMLElement {
        XMLElement(
            "message", namespace: XMLNamespace.client, ["from": jid.description, "to": recipient.description],
            [XMLElement("x", namespace: MUCNamespace.user, [:], [item] + [password].compactMap { $0 }), XMLElement("body", text: body)])
    }

    private static func addressee(_ element: XMLElement) throws(StanzaError) -> JID {
        guard let value = element[attribute: "to"], let jid = try? JID(value) else {
            throw StanzaError(.jidMalformed, text: "An <\(element.name)/> needs a 'to' JID, got '\(element[attribute: "to"] ?? "")'.")
        }
        return jid
    }
}
