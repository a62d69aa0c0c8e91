import ParleyCore

/// Voice requests (XEP-0045 §7.13, §8.6): a visitor in a moderated room sends the room a
/// `muc#request` form asking for the participant role; every moderator gets the approval
/// form; a moderator who submits it with `muc#request_allow` true makes the visitor a
/// participant, which everyone sees in its presence.
extension MUCRoom {
    static let requestFormType = "http://jabber.org/protocol/muc#request"

    /// A `muc#request` form sent to the room by `session`: a request from a visitor, or a
    /// moderator's answer to one.
    mutating func voiceRequest(_ form: XMLElement, from session: JID, out: inout [XMLElement]) throws(StanzaError) {
        let fields = Self.values(of: form)
        guard fields["FORM_TYPE"] == Self.requestFormType else {
            throw StanzaError(.badRequest, text: "A data form sent to the room is a \(Self.requestFormType) voice request.")
        }
        guard let nick = nick(of: session), let sender = occupant(nick) else {
            throw StanzaError(.notAcceptable, text: "Only occupants may ask for voice in this room; join it first.")
        }
        if sender.role == .moderator {
            return try answerVoiceRequest(fields, from: nick, out: &out)
        }
        guard sender.role == .visitor else {
            throw StanzaError(.notAcceptable, text: "You already have voice in this room.")
        }
        if let role = fields["muc#role"], role != MUCRole.participant.rawValue {
            throw StanzaError(.badRequest, text: "A voice request asks for the participant role, not '\(role)'.")
        }
        let moderators = occupants.values.filter { $0.role == .moderator }.flatMap(\.sessions)
        guard !moderators.isEmpty else {
            throw StanzaError(.recipientUnavailable, type: .wait, text: "No moderator is in the room to grant voice; try later.")
        }
        let approval = approvalForm(for: sender)
        for moderator in moderators {
            out.append(
                XMLElement(
                    "message", namespace: XMLNamespace.client, ["from": jid.description, "to": moderator.description],
                    [
                        approval,
                        XMLElement(
                            "body", namespace: XMLNamespace.client,
                            text: "\(sender.nick) asks for voice in \(jid); answer the form to grant it."),
                    ]))
        }
    }

    /// §8.6: a moderator's submitted approval form. A denial, or a grant for someone who
    /// has voice already, changes nothing.
    private mutating func answerVoiceRequest(_ fields: [String: String], from moderator: String, out: inout [XMLElement]) throws(StanzaError) {
        guard let allow = fields["muc#request_allow"] else {
            throw StanzaError(.badRequest, text: "An answer to a voice request carries muc#request_allow.")
        }
        guard allow == "1" || allow == "true" else { return }
        let target: MUCOccupant?
        if let nick = fields["muc#roomnick"] {
            target = occupant(nick)
        } else if let value = fields["muc#jid"], let real = try? JID(value) {
            target = occupants.values.first { $0.sessions.contains(real) || $0.account == real }
        } else {
            throw StanzaError(.badRequest, text: "An answer to a voice request names muc#roomnick or muc#jid.")
        }
        guard let target else {
            throw StanzaError(.itemNotFound, text: "Whoever asked for voice is no longer in the room.")
        }
        guard target.role == .visitor else { return }
        update(target.nick) { $0.role = .participant }
        announceOccupant(target.nick, out: &out)
    }

    /// The form of §8.6 (example 90) about `visitor`, for a moderator to submit.
    private func approvalForm(for visitor: MUCOccupant) -> XMLElement {
        func field(_ name: String, _ type: String, _ label: String?, _ value: String) -> XMLElement {
            var field = XMLElement("field", namespace: XMLNamespace.dataForms, ["var": name, "type": type])
            if let label { field.setAttribute("label", label) }
            field.append(XMLElement("value", namespace: XMLNamespace.dataForms, text: value))
            return field
        }
        return XMLElement(
            "x", namespace: XMLNamespace.dataForms, ["type": "form"],
            [
                XMLElement("title", namespace: XMLNamespace.dataForms, text: "Voice request"),
                XMLElement(
                    "instructions", namespace: XMLNamespace.dataForms,
                    text: "To grant voice, set \"Grant voice?\" and submit; to leave it, do nothing."),
                field("FORM_TYPE", "hidden", nil, Self.requestFormType),
                field("muc#role", "list-single", "Requested role", MUCRole.participant.rawValue),
                field("muc#jid", "jid-single", "User ID", visitor.realJID.description),
                field("muc#roomnick", "text-single", "Room nickname", visitor.nick),
                field("muc#request_allow", "boolean", "Grant voice?", "false"),
            ])
    }

    /// The first value of each field of a form.
    private static func values(of form: XMLElement) -> [String: String] {
        var values: [String: String] = [:]
        for field in form.children("field", namespace: XMLNamespace.dataForms) {
            guard let name = field[attribute: "var"], values[name] == nil else { continue }
            values[name] = field.firstChild("value", namespace: XMLNamespace.dataForms)?.text ?? ""
        }
        return values
    }
}
