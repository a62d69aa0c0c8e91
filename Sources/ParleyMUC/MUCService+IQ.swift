import ParleyCore

/// The iqs the service and its rooms answer: disco (XEP-0030, the room list and room
/// features), the owner's configuration (XEP-0045 §10.1–10.2, §10.9) and self-ping (XEP-0410).
extension MUCService {
    /// A stanza to the service's own domain.
    func serviceStanza(_ stanza: XMLElement, from sender: JID, state: State, out: inout [XMLElement]) {
        guard stanza.name == "iq", stanza.type == "get" || stanza.type == "set", let payload = stanza.elements.first else {
            if stanza.name == "message" { refuse(stanza, StanzaError(.serviceUnavailable), out: &out) }
            return
        }
        switch (stanza.type, payload.name, payload.namespace) {
        case ("get", "query", XMLNamespace.discoInfo?):
            if let node = payload[attribute: "node"] { return refuse(stanza, Self.noSuchNode(node), out: &out) }
            var query = XMLElement("query", namespace: XMLNamespace.discoInfo)
            query.append(XMLElement("identity", ["category": "conference", "type": "text", "name": name]))
            for feature in [XMLNamespace.discoInfo, XMLNamespace.discoItems, MUCNamespace.muc] {
                query.append(XMLElement("feature", ["var": feature]))
            }
            out.append(stanza.iqResult(query))
        case ("get", "query", XMLNamespace.discoItems?):
            out.append(stanza.iqResult(roomList(state)))
        default:
            refuse(stanza, StanzaError(.serviceUnavailable), out: &out)
        }
    }

    /// XEP-0030 §3.2: the service and its rooms have no nodes but the reserved-nickname one.
    static func noSuchNode(_ node: String) -> StanzaError {
        StanzaError(.itemNotFound, text: "There is no disco node '\(node)' here.")
    }

    /// §6.3: the public rooms, locked ones left out.
    private func roomList(_ state: State) -> XMLElement {
        var query = XMLElement("query", namespace: XMLNamespace.discoItems)
        let rooms = state.rooms.values.filter { $0.configuration.isPublic && !$0.locked }
        for room in rooms.sorted(by: { $0.jid < $1.jid }) {
            let name = room.configuration.name.isEmpty ? room.jid.localpart ?? "" : room.configuration.name
            query.append(XMLElement("item", ["jid": room.jid.description, "name": name]))
        }
        return query
    }

    func iq(_ stanza: XMLElement, from sender: JID, room key: String, nick: String?, state: inout State, out: inout [XMLElement]) {
        guard stanza.type == "get" || stanza.type == "set" else {
            // An occupant answering a request the room passed on.
            if nick != nil, stanza.type == "result" || stanza.type == "error" {
                state.rooms[key]?.forwardAnswer(stanza, from: sender, out: &out)
            }
            return
        }
        guard let payload = stanza.elements.first, stanza.elements.count == 1 else {
            return refuse(stanza, StanzaError(.badRequest, text: "An iq get or set carries exactly one child element."), out: &out)
        }
        guard let room = state.rooms[key] else {
            return refuse(stanza, StanzaError(.itemNotFound, text: "There is no room \(key)@\(domain)."), out: &out)
        }
        if let nick {
            guard room.nick(of: sender) != nil else {
                // §6.7: a non-occupant's disco request to an occupant is a bad request.
                // Anything else gets not-acceptable, as Prosody answers, which is also what
                // tells a client's self-ping (XEP-0410) that it is no longer in the room.
                if payload.namespace == XMLNamespace.discoInfo || payload.namespace == XMLNamespace.discoItems {
                    return refuse(stanza, StanzaError(.badRequest, text: "Only occupants query other occupants."), out: &out)
                }
                return refuse(stanza, StanzaError(.notAcceptable, type: .cancel, text: "You are not in this room."), out: &out)
            }
            if payload.name == "ping", payload.namespace == XMLNamespace.ping, room.nick(of: sender) == nick {
                return out.append(stanza.iqResult())
            }
            do throws(StanzaError) {
                try state.rooms[key]?.forwardRequest(stanza, from: sender, to: nick, out: &out)
            } catch {
                refuse(stanza, error, out: &out)
            }
            return
        }
        switch (stanza.type, payload.name, payload.namespace) {
        case ("get", "query", XMLNamespace.discoInfo?):
            guard !room.locked || room.nick(of: sender) != nil else {
                return refuse(stanza, StanzaError(.itemNotFound, text: "There is no room \(key)@\(domain)."), out: &out)
            }
            switch payload[attribute: "node"] {
            case nil: out.append(stanza.iqResult(Self.info(of: room)))
            case "x-roomuser-item": out.append(stanza.iqResult(room.reservedNickInfo(for: sender)))
            case let node?: refuse(stanza, Self.noSuchNode(node), out: &out)
            }
        case ("get", "query", XMLNamespace.discoItems?):
            out.append(stanza.iqResult(XMLElement("query", namespace: XMLNamespace.discoItems)))
        case ("get", "query", MUCNamespace.admin?):
            do throws(StanzaError) {
                out.append(stanza.iqResult(try room.adminList(payload, from: sender)))
            } catch {
                refuse(stanza, error, out: &out)
            }
        case ("set", "query", MUCNamespace.admin?):
            do throws(StanzaError) {
                // All items or none: the change is made on a copy.
                let wasPersistent = room.configuration.persistent && !room.locked
                var changed = room
                var notices: [XMLElement] = []
                let outcome = try changed.admin(payload, from: sender, out: &notices)
                state.rooms[key] = changed
                out.append(contentsOf: notices)
                for session in outcome.removedSessions { state.roomsBySession[session]?.remove(key) }
                if outcome.affiliationsChanged { persist(key, wasPersistent: wasPersistent, state: &state) }
                out.append(stanza.iqResult())
            } catch {
                refuse(stanza, error, out: &out)
            }
        case (_, "query", MUCRoom.registerNamespace?):
            register(stanza, payload, from: sender, room: key, state: &state, out: &out)
        case (_, "query", MUCNamespace.owner?):
            guard room.affiliation(of: sender) == .owner else {
                return refuse(stanza, StanzaError(.forbidden, text: "Only the room's owners may configure it."), out: &out)
            }
            if stanza.type == "get" {
                let form = room.configurationForm(serviceMaxOccupants: settings.maxOccupantsPerRoom)
                return out.append(stanza.iqResult(XMLElement("query", namespace: MUCNamespace.owner, [:], [form])))
            }
            configure(stanza, payload, from: sender, room: key, state: &state, out: &out)
        case (_, "query", XMLNamespace.archive?):
            archiveRequest(stanza, payload, from: sender, room: key, state: state, out: &out)
        case ("get", "metadata", XMLNamespace.archive?):
            archiveMetadata(stanza, from: sender, room: key, state: state, out: &out)
        case (_, "vCard", MUCNamespace.vCard?):
            vCardRequest(stanza, payload, from: sender, room: key, state: &state, out: &out)
        default:
            refuse(stanza, StanzaError(.serviceUnavailable), out: &out)
        }
    }

    /// §10.1.2–10.2: a submitted form configures (and unlocks) the room; a cancelled one
    /// of a room still locked, or a `<destroy/>`, ends it (§10.1.3, §10.9).
    private func configure(
        _ stanza: XMLElement, _ query: XMLElement, from sender: JID, room key: String, state: inout State, out: inout [XMLElement]
    ) {
        guard var room = state.rooms[key] else { return }
        if let destroy = query.firstChild("destroy", namespace: MUCNamespace.owner) {
            // §10.9: the occupants are told, then the owner gets the result.
            self.destroy(key, request: destroy, state: &state, out: &out)
            return out.append(stanza.iqResult())
        }
        guard let form = query.firstChild("x", namespace: XMLNamespace.dataForms) else {
            return refuse(stanza, StanzaError(.badRequest, text: "A configuration carries a jabber:x:data form or <destroy/>."), out: &out)
        }
        switch form[attribute: "type"] {
        case "submit":
            let wasPersistent = room.configuration.persistent && !room.locked
            let listChanges: [(account: JID, affiliation: MUCAffiliation)]
            do {
                listChanges = try room.ownerListChanges(in: form)
                try room.configuration.apply(form, serviceMaxOccupants: settings.maxOccupantsPerRoom)
            } catch {
                return refuse(stanza, error, out: &out)
            }
            let wasLocked = room.locked
            room.locked = false
            out.append(stanza.iqResult())
            if !wasLocked {
                for session in room.configurationChanged(from: state.rooms[key]?.configuration ?? room.configuration, out: &out) {
                    state.roomsBySession[session]?.remove(key)
                }
            }
            let actor = room.nick(of: sender)
            for change in listChanges {
                for session in room.setAffiliation(change.affiliation, of: change.account, actor: actor, reason: nil, out: &out) {
                    state.roomsBySession[session]?.remove(key)
                }
            }
            state.rooms[key] = room
            persist(key, wasPersistent: wasPersistent, state: &state)
        case "cancel":
            out.append(stanza.iqResult())
            if room.locked { destroy(key, request: nil, state: &state, out: &out) }
        default:
            refuse(stanza, StanzaError(.badRequest, text: "A configuration form is of type submit or cancel."), out: &out)
        }
    }

    /// §10.9: every occupant gets unavailable presence carrying `<destroy/>` with what the
    /// owner's `request` gave (an alternate venue's `jid`, its `<password/>`, a `<reason/>`),
    /// with neither affiliation nor role left; the room is gone.
    private func destroy(_ key: String, request: XMLElement?, state: inout State, out: inout [XMLElement]) {
        guard let room = state.rooms.removeValue(forKey: key) else { return }
        persist(key, wasPersistent: room.configuration.persistent && !room.locked, state: &state)
        forgetArchive(of: key, state: &state)
        var destroy = XMLElement("destroy", namespace: MUCNamespace.user)
        if let venue = request?[attribute: "jid"].flatMap({ try? JID($0) }) { destroy.setAttribute("jid", venue.description) }
        for name in ["password", "reason"] {
            if let text = request?.firstChild(name, namespace: MUCNamespace.owner)?.text { destroy.append(XMLElement(name, text: text)) }
        }
        for session in room.allSessions {
            guard let nick = room.nick(of: session), let occupant = room.occupant(nick) else { continue }
            out.append(
                room.presence(
                    of: occupant, to: session, type: "unavailable", statuses: [.selfPresence], role: MUCRole.none,
                    affiliation: MUCAffiliation.none, extra: [destroy]))
            state.roomsBySession[session]?.remove(key)
        }
    }

    /// §6.4 and §15.5.4: what clients show about a room before entering it.
    private static func roomInfoForm(_ room: MUCRoom) -> XMLElement {
        func field(_ name: String, _ value: String) -> XMLElement {
            XMLElement("field", ["var": name], [XMLElement("value", text: value)])
        }
        var form = XMLElement("x", namespace: XMLNamespace.dataForms, ["type": "result"])
        var formType = field("FORM_TYPE", MUCNamespace.roomInfo)
        formType.setAttribute("type", "hidden")
        form.append(formType)
        form.append(field("muc#roomconfig_roomname", room.configuration.name))
        form.append(field("muc#roominfo_description", room.configuration.description))
        form.append(field("muc#roominfo_occupants", String(room.occupantCount)))
        form.append(field("muc#roominfo_subject", room.subject?.text ?? ""))
        // Clients (Conversations among them) read it here to offer private messages or not.
        form.append(field("muc#roomconfig_allowpm", room.configuration.privateMessages.rawValue))
        // Whether an occupant may invite, as Prosody reports it: anyone with voice in an open
        // room; in a members-only one, members only when the owners allow it.
        let invites = !room.configuration.membersOnly || room.configuration.membersMayInvite
        form.append(field("muc#roomconfig_allowinvites", invites ? "1" : "0"))
        form.append(room.avatarHashField)
        return form
    }

    /// §6.4: the room's identity and the features that describe it.
    static func info(of room: MUCRoom) -> XMLElement {
        var query = XMLElement("query", namespace: XMLNamespace.discoInfo)
        let name = room.configuration.name.isEmpty ? room.jid.localpart ?? "" : room.configuration.name
        query.append(XMLElement("identity", ["category": "conference", "type": "text", "name": name]))
        let configuration = room.configuration
        var features = [
            MUCNamespace.muc, MUCNamespace.occupantID, XMLNamespace.discoInfo, MUCRoom.registerNamespace, MUCRoom.requestFormType,
            configuration.moderated ? "muc_moderated" : "muc_unmoderated",
            configuration.membersOnly ? "muc_membersonly" : "muc_open",
            configuration.password != nil ? "muc_passwordprotected" : "muc_unsecured",
            configuration.persistent ? "muc_persistent" : "muc_temporary", configuration.isPublic ? "muc_public" : "muc_hidden",
            configuration.whois == .anyone ? "muc_nonanonymous" : "muc_semianonymous",
            // XEP-0410 §3.3: the room answers a self-ping itself.
            MUCNamespace.selfPingOptimization,
        ]
        features += room.archiveAndAvatarFeatures
        features.sort()
        for feature in features { query.append(XMLElement("feature", ["var": feature])) }
        query.append(roomInfoForm(room))
        return query
    }
}
