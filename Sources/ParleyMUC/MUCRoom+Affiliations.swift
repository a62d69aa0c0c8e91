import ParleyCore

/// What an affiliation change does (XEP-0045 §9.1–9.8, §10.3–10.7): the occupant's role
/// follows its new standing, everyone in the room sees it; a ban (301) or, in a members-only
/// room, the loss of membership (321) takes it out. A user who is not in the room is told by
/// a message from the room (status 101), and so are the occupants who may see real JIDs,
/// as Prosody does.
extension MUCRoom {
    /// §5.1: the role a user with `affiliation` gets on entry.
    func defaultRole(for affiliation: MUCAffiliation) -> MUCRole {
        switch affiliation {
        case .owner, .admin: .moderator
        case .member: .participant
        case .none: configuration.moderated ? .visitor : .participant
        case .outcast: .none
        }
    }

    /// Sets the affiliation and tells whom it concerns; returns the sessions it removed.
    mutating func setAffiliation(
        _ affiliation: MUCAffiliation, of account: JID, actor: String?, reason: String?, out: inout [XMLElement]
    ) -> [JID] {
        let account = account.bare
        let previous = self.affiliation(of: account)
        affiliations[account] = affiliation == .none ? nil : affiliation
        // As Prosody: a reservation belongs to a standing in the room and goes with it.
        if affiliation == .none || affiliation == .outcast { reservedNicks[account] = nil }
        let present = occupants.values.filter { $0.account == account }.sorted { $0.nick < $1.nick }
        guard !present.isEmpty else {
            announceAway(account, affiliation: affiliation, reason: reason, out: &out)
            return []
        }
        let role = defaultRole(for: affiliation)
        let downgrade = Self.rank(previous) > Self.rank(affiliation)
        var removed: [JID] = []
        for occupant in present {
            if affiliation == .outcast {
                removed += removeOccupant(occupant, statuses: [.banned], actor: actor, reason: reason, out: &out)
            } else if affiliation == .none, configuration.membersOnly {
                removed += removeOccupant(occupant, statuses: [.removedByAffiliation], actor: actor, reason: reason, out: &out)
            } else {
                // As Prosody: a downgrade brings the role down to the default, an upgrade
                // only raises it (a voiced visitor keeps its voice).
                if occupant.role != role, downgrade || Self.rank(occupant.role) < Self.rank(role) {
                    update(occupant.nick) { $0.role = role }
                }
                announceOccupant(occupant.nick, out: &out)
                revealRealJIDs(to: occupant.nick, after: occupant.role, out: &out)
            }
        }
        return removed
    }

    /// The occupant's changed presence, to everyone (110 to its own sessions).
    func announceOccupant(_ nick: String, out: inout [XMLElement]) {
        guard let occupant = occupant(nick) else { return }
        for session in allSessions {
            out.append(presence(of: occupant, to: session, statuses: occupant.sessions.contains(session) ? [.selfPresence] : []))
        }
    }

    /// Takes the occupant out: unavailable presence with `statuses`, the actor and the
    /// reason, to everyone including its own sessions (with 110).
    mutating func removeOccupant(
        _ occupant: MUCOccupant, statuses: [MUCStatus], actor: String?, reason: String?, out: inout [XMLElement]
    ) -> [JID] {
        var details: [XMLElement] = []
        if let actor { details.append(XMLElement("actor", namespace: MUCNamespace.user, ["nick": actor])) }
        if let reason { details.append(XMLElement("reason", namespace: MUCNamespace.user, text: reason)) }
        for session in allSessions {
            let own = occupant.sessions.contains(session)
            out.append(
                presence(
                    of: occupant, to: session, type: "unavailable", statuses: own ? statuses + [.selfPresence] : statuses,
                    role: MUCRole.none, itemChildren: details))
        }
        for session in occupant.sessions { _ = removeSession(session) }
        return occupant.sessions.array
    }

    /// A change for someone not in the room: the occupants who may see real JIDs get the
    /// item (XEP-0045 example 195, as Prosody sends it), the user a headline with 101.
    private func announceAway(_ account: JID, affiliation: MUCAffiliation, reason: String?, out: inout [XMLElement]) {
        var item = XMLElement("item", namespace: MUCNamespace.user, ["affiliation": affiliation.rawValue, "jid": account.description])
        if let reason { item.append(XMLElement("reason", namespace: MUCNamespace.user, text: reason)) }
        for session in allSessions where maySee(realJIDsAs: session) {
            out.append(
                XMLElement(
                    "message", namespace: XMLNamespace.client, ["from": jid.description, "to": session.description],
                    [XMLElement("x", namespace: MUCNamespace.user, [:], [item])]))
        }
        let status = XMLElement("status", namespace: MUCNamespace.user, ["code": String(MUCStatus.affiliationChangedAway.rawValue)])
        out.append(
            XMLElement(
                "message", namespace: XMLNamespace.client, ["from": jid.description, "to": account.description, "type": "headline"],
                [
                    XMLElement("body", namespace: XMLNamespace.client, text: "Your affiliation with the room \(jid) is now \(affiliation.rawValue)."),
                    XMLElement("x", namespace: MUCNamespace.user, [:], [item, status]),
                ]))
    }

    private static func rank(_ affiliation: MUCAffiliation) -> Int {
        switch affiliation {
        case .outcast: 0
        case .none: 1
        case .member: 2
        case .admin: 3
        case .owner: 4
        }
    }

    private static func rank(_ role: MUCRole) -> Int {
        switch role {
        case .none: 0
        case .visitor: 1
        case .participant: 2
        case .moderator: 3
        }
    }
}
