import Foundation
import ParleyCore

/// Moderation, administration and ownership of rooms (XEP-0045 §8–§10), and invitations
/// (§7.8.2, XEP-0249). Each throws `ClientError.refused` with the room's stanza error.
extension ChatClient {
    /// Kicks the occupant `nick` (§8.2): their role becomes `none`.
    public func kick(_ nick: String, from room: JID, reason: String? = nil) async throws {
        try await setRole(.none, of: nick, in: room, reason: reason)
    }

    /// Grants or revokes voice and moderation (§8.3–8.6, §9.6–9.7).
    public func setRole(_ role: RoomRole, of nick: String, in room: JID, reason: String? = nil) async throws {
        var item = XMLElement("item", namespace: RoomNamespace.admin, ["nick": nick, "role": role.rawValue])
        if let reason { item.append(XMLElement("reason", namespace: RoomNamespace.admin, text: reason)) }
        _ = try await roomRequest("set", to: room.bare, XMLElement("query", namespace: RoomNamespace.admin, [:], [item]))
    }

    /// Bans the account `jid` (§9.1): its affiliation becomes `outcast`.
    public func ban(_ jid: JID, from room: JID, reason: String? = nil) async throws {
        try await setAffiliation(.outcast, of: jid, in: room, reason: reason)
    }

    /// Makes `jid` an owner, admin or member, bans it, or takes its affiliation away
    /// (§9.2–9.5, §10.3–10.8).
    public func setAffiliation(_ affiliation: RoomAffiliation, of jid: JID, in room: JID, reason: String? = nil) async throws {
        var item = XMLElement("item", namespace: RoomNamespace.admin, ["jid": jid.bare.description, "affiliation": affiliation.rawValue])
        if let reason { item.append(XMLElement("reason", namespace: RoomNamespace.admin, text: reason)) }
        _ = try await roomRequest("set", to: room.bare, XMLElement("query", namespace: RoomNamespace.admin, [:], [item]))
    }

    /// The accounts with `affiliation` (§9.5, §10.5): for admins and owners.
    public func affiliations(_ affiliation: RoomAffiliation, in room: JID) async throws -> [JID] {
        let item = XMLElement("item", namespace: RoomNamespace.admin, ["affiliation": affiliation.rawValue])
        let answer = try await roomRequest("get", to: room.bare, XMLElement("query", namespace: RoomNamespace.admin, [:], [item]))
        return answer.firstChild("query", namespace: RoomNamespace.admin)?.children("item", namespace: RoomNamespace.admin)
            .compactMap { $0[attribute: "jid"].flatMap { try? JID($0) } } ?? []
    }

    /// §10.1.2: accepts the service's default configuration for a room we just created.
    public func createInstantRoom(_ room: JID) async throws {
        let form = XMLElement("x", namespace: XMLNamespace.dataForms, ["type": "submit"])
        _ = try await roomRequest("set", to: room.bare, XMLElement("query", namespace: RoomNamespace.owner, [:], [form]))
    }

    /// The room's configuration form (§10.2, `muc#roomconfig`): for owners.
    public func roomConfiguration(_ room: JID) async throws -> [RoomFormField] {
        let answer = try await roomRequest("get", to: room.bare, XMLElement("query", namespace: RoomNamespace.owner))
        guard let form = answer.firstChild("query", namespace: RoomNamespace.owner)?.firstChild("x", namespace: XMLNamespace.dataForms) else {
            throw ClientError.refused(StanzaError(.undefinedCondition, text: "The room answered without a configuration form."))
        }
        return form.children("field", namespace: XMLNamespace.dataForms).compactMap { field in
            guard let name = field[attribute: "var"] else { return nil }
            return RoomFormField(
                name: name, type: field[attribute: "type"], label: field[attribute: "label"],
                values: field.children("value", namespace: XMLNamespace.dataForms).map(\.text),
                options: field.children("option", namespace: XMLNamespace.dataForms).compactMap {
                    $0.firstChild("value", namespace: XMLNamespace.dataForms)?.text
                })
        }
    }

    /// Submits configuration changes (§10.2): `values` by field name, e.g.
    /// `["muc#roomconfig_roomname": ["Team"], "muc#roomconfig_persistentroom": ["1"]]`.
    /// Fields left out keep their values.
    public func configureRoom(_ room: JID, _ values: [String: [String]]) async throws {
        var form = XMLElement("x", namespace: XMLNamespace.dataForms, ["type": "submit"])
        form.append(
            XMLElement(
                "field", namespace: XMLNamespace.dataForms, ["var": "FORM_TYPE", "type": "hidden"],
                [XMLElement("value", namespace: XMLNamespace.dataForms, text: RoomNamespace.roomConfig)]))
        for (name, fieldValues) in values.sorted(by: { $0.key < $1.key }) {
            var field = XMLElement("field", namespace: XMLNamespace.dataForms, ["var": name])
            for value in fieldValues { field.append(XMLElement("value", namespace: XMLNamespace.dataForms, text: value)) }
            form.append(field)
        }
        _ = try await roomRequest("set", to: room.bare, XMLElement("query", namespace: RoomNamespace.owner, [:], [form]))
    }

    /// Destroys the room (§10.9): every occupant is sent out with the reason and, when
    /// given, the room that replaces it.
    public func destroyRoom(_ room: JID, reason: String? = nil, alternateVenue: JID? = nil) async throws {
        var destroy = XMLElement("destroy", namespace: RoomNamespace.owner)
        if let alternateVenue { destroy.setAttribute("jid", alternateVenue.bare.description) }
        if let reason { destroy.append(XMLElement("reason", namespace: RoomNamespace.owner, text: reason)) }
        _ = try await roomRequest("set", to: room.bare, XMLElement("query", namespace: RoomNamespace.owner, [:], [destroy]))
    }

    /// Invites `invitee` to `room`: through the room (§7.8.2, which tells the room's
    /// members-only list) or, `direct`, straight to them (XEP-0249, with the room's password).
    public func invite(_ invitee: JID, to room: JID, reason: String? = nil, direct: Bool = false) async throws {
        let room = room.bare
        guard let state = muc.rooms[room], state.inRoom else { throw ClientError.notInRoom(room) }
        var message: XMLElement
        if direct {
            var x = XMLElement("x", namespace: RoomNamespace.conference, ["jid": room.description])
            if let reason { x.setAttribute("reason", reason) }
            if let password = state.password { x.setAttribute("password", password) }
            message = XMLElement("message", namespace: XMLNamespace.client, ["to": invitee.description, "id": UUID().uuidString], [x])
        } else {
            var invite = XMLElement("invite", namespace: RoomNamespace.user, ["to": invitee.description])
            if let reason { invite.append(XMLElement("reason", namespace: RoomNamespace.user, text: reason)) }
            message = XMLElement(
                "message", namespace: XMLNamespace.client, ["to": room.description, "id": UUID().uuidString],
                [XMLElement("x", namespace: RoomNamespace.user, [:], [invite])])
        }
        // A fallback for clients that know neither (XEP-0249 §3 suggests none; chat apps show one).
        message.append(XMLElement("body", text: "\(ownBareJID) invites you to the room \(room)" + (reason.map { ": \($0)" } ?? ".")))
        await send(message)
    }

    /// Accepts an invitation: enters the room with its password.
    @discardableResult
    public func accept(_ invitation: RoomInvitation, nick: String) async throws -> JoinedRoom {
        try await join(invitation.room, nick: nick, password: invitation.password)
    }

    /// Declines a mediated invitation (§7.8.2): the room tells the inviter. A direct
    /// invitation (XEP-0249) has no decline; nothing is sent.
    public func decline(_ invitation: RoomInvitation, reason: String? = nil) async {
        guard !invitation.isDirect else { return }
        var decline = XMLElement("decline", namespace: RoomNamespace.user, ["to": invitation.from.description])
        if let reason { decline.append(XMLElement("reason", namespace: RoomNamespace.user, text: reason)) }
        await send(
            XMLElement(
                "message", namespace: XMLNamespace.client, ["to": invitation.room.description, "id": UUID().uuidString],
                [XMLElement("x", namespace: RoomNamespace.user, [:], [decline])]))
    }
}
