import ParleyCore

/// Mediated invitations (XEP-0045 §7.8.2) and their declines (§7.8.2 example 59): the room
/// passes them on, so the invitee learns the room and who invited it, and the inviter who
/// declined. Each carries a body too, so a client that knows nothing of MUC shows it and an
/// offline invitee finds it in offline storage.
extension MUCRoom {
    static let maxInvitations = 20

    func relayInvitations(_ x: XMLElement, from session: JID, out: inout [XMLElement]) throws(StanzaError) {
        let invites = x.children("invite", namespace: MUCNamespace.user)
        let declines = x.children("decline", namespace: MUCNamespace.user)
        guard !invites.isEmpty || !declines.isEmpty else {
            throw StanzaError(.featureNotImplemented, text: "Only invitations and declines are supported in messages to the room.")
        }
        guard invites.count + declines.count <= Self.maxInvitations else {
            throw StanzaError(.policyViolation, text: "At most \(Self.maxInvitations) invitations in one message.")
        }
        if !invites.isEmpty, nick(of: session) == nil {
            throw StanzaError(.notAcceptable, text: "Only occupants may invite others to this room; join it first.")
        }
        for invite in invites {
            let recipient = try Self.addressee(invite)
            let reason = invite.firstChild("reason", namespace: MUCNamespace.user)?.text
            var item = XMLElement("invite", namespace: MUCNamespace.user, ["from": session.bare.description])
            if let reason { item.append(XMLElement("reason", text: reason)) }
            let text = "\(session.bare) invites you to the room \(jid)" + (reason.map { ": \($0)" } ?? ".")
            out.append(notice(item, to: recipient, body: text))
        }
        for decline in declines {
            let recipient = try Self.addressee(decline)
            let reason = decline.firstChild("reason", namespace: MUCNamespace.user)?.text
            var item = XMLElement("decline", namespace: MUCNamespace.user, ["from": session.bare.description])
            if let reason { item.append(XMLElement("reason", text: reason)) }
            let text = "\(session.bare) declined your invitation to the room \(jid)" + (reason.map { ": \($0)" } ?? ".")
            out.append(notice(item, to: recipient, body: text))
        }
    }

    private func notice(_ item: XMLElement, to recipient: JID, body: String) -> XMLElement {
        XMLElement(
            "message", namespace: XMLNamespace.client, ["from": jid.description, "to": recipient.description],
            [XMLElement("x", namespace: MUCNamespace.user, [:], [item]), XMLElement("body", text: body)])
    }

    private static func addressee(_ element: XMLElement) throws(StanzaError) -> JID {
        guard let value = element[attribute: "to"], let jid = try? JID(value) else {
            throw StanzaError(.jidMalformed, text: "An <\(element.name)/> needs a 'to' JID, got '\(element[attribute: "to"] ?? "")'.")
        }
        return jid
    }
}
