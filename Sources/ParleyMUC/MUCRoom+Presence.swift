import ParleyCore

/// Entering, changing presence or nickname in, and leaving a room (XEP-0045 §7.2–7.6, §7.14).
extension MUCRoom {
    /// Available presence from `session` to `room/nick`: an entry, a presence update or a
    /// nickname change. Throws the error the sender gets instead. Returns the addresses of
    /// the runs of copies it put in `out` (the rest the service reads from the stanzas), those
    /// of `runsFrom` copies or more.
    @discardableResult
    mutating func available(
        _ stanza: XMLElement, from session: JID, nick: String, created: Bool, maxOccupants: Int, assignedNick: Bool = false,
        out: inout [XMLElement], runsFrom minimum: Int = MUCAddressedRun.minimumCount
    ) throws(StanzaError) -> [MUCAddressedRun] {
        readyRecipients()
        if let current = self.nick(of: session) {
            if current == nick { return [update(stanza, of: current, out: &out, runsFrom: minimum)].compactMap { $0 } }
            try changeNick(from: current, to: nick, session: session, stanza: stanza, assigned: assignedNick, out: &out)
            return []
        }
        let affiliation = affiliation(of: session)
        if locked, affiliation != .owner {
            throw StanzaError(.itemNotFound, text: "The room is locked until its owner has configured it.")
        }
        try admit(stanza, affiliation: affiliation)
        if let existing = occupant(nick) {
            // The same account from another device joins the same occupant (one nickname).
            guard existing.account == session.bare else {
                throw StanzaError(.conflict, text: "The nickname '\(nick)' is in use in this room.")
            }
            addSession(session, to: nick)
            let others = sendOccupants(
                to: session, withRealJID: seesRealJIDs(occupant(nick) ?? existing), except: nick, out: &out, runsFrom: minimum)
            out.append(presence(of: occupant(nick) ?? existing, to: session, statuses: selfStatuses(created: false, assignedNick: assignedNick)))
            out.append(contentsOf: historyMessages(to: session, request: Self.historyRequest(stanza)))
            out.append(subjectMessage(to: session))
            out.append(contentsOf: avatarPresence(to: session))
            return [others].compactMap { $0 }
        }
        // §7.2.10: a full room; its owners and admins still get in.
        guard occupantCount < maxOccupants || affiliation == .owner || affiliation == .admin else {
            // §7.2.10: type wait, the room may have room later.
            throw StanzaError(.serviceUnavailable, type: .wait, text: "The room is full (\(maxOccupants) occupants).")
        }
        let occupant = MUCOccupant(
            nick: nick, account: session.bare, sessions: [session],
            role: defaultRole(for: affiliation),
            id: occupantID(for: session), presence: stanza)
        // The newcomer sees real JIDs as its role lets it (§7.2.3: a moderator does).
        let others = sendOccupants(to: session, withRealJID: seesRealJIDs(occupant), except: nil, out: &out, runsFrom: minimum)
        add(occupant)
        let newcomer = broadcastShown(occupant, except: [session], out: &out, runsFrom: minimum)
        out.append(presence(of: occupant, to: session, statuses: selfStatuses(created: created, assignedNick: assignedNick)))
        out.append(contentsOf: historyMessages(to: session, request: Self.historyRequest(stanza)))
        out.append(subjectMessage(to: session))
        out.append(contentsOf: avatarPresence(to: session))
        return [others, newcomer].compactMap { $0 }
    }

    /// Unavailable presence (`stanza`), or the end of the session (nil): the session leaves;
    /// the occupant leaves with its last session, and the others see it go.
    mutating func leave(_ session: JID, stanza: XMLElement?, out: inout [XMLElement]) {
        guard let nick = nick(of: session), var leaving = occupant(nick) else { return }
        if let stanza { leaving.presence = stanza }
        leaving.sessions = [session]
        if removeSession(session) != nil {
            readyRecipients()
            broadcast(out: &out) { presence(of: leaving, to: "", withRealJID: $0, type: "unavailable", role: MUCRole.none) }
        }
        if stanza != nil {
            out.append(presence(of: leaving, to: session, type: "unavailable", statuses: [.selfPresence], role: MUCRole.none))
        }
    }

    /// An occupant session that cannot be reached (its client returned an error to the room,
    /// or its node died while the room was between nodes): it leaves, and the others see it
    /// go with 333 (XEP-0045 §15.6.2, as Prosody); it gets nothing itself.
    mutating func removeForTechnicalReason(_ session: JID, out: inout [XMLElement]) {
        guard let nick = nick(of: session), var leaving = occupant(nick) else { return }
        leaving.sessions = [session]
        if removeSession(session) != nil {
            readyRecipients()
            broadcast(out: &out) {
                presence(of: leaving, to: "", withRealJID: $0, type: "unavailable", statuses: [.technicalRemoval], role: MUCRole.none)
            }
        }
    }

    /// The occupant's new show/status, to everyone in the room; the addresses of the copies
    /// to the others.
    private mutating func update(_ stanza: XMLElement, of nick: String, out: inout [XMLElement], runsFrom minimum: Int) -> MUCAddressedRun? {
        self.update(nick) { $0.presence = stanza }
        guard let occupant = occupant(nick) else { return nil }
        for session in occupant.sessions { out.append(presence(of: occupant, to: session, statuses: [.selfPresence])) }
        return broadcastShown(occupant, except: occupant.sessions, out: &out, runsFrom: minimum)
    }

    /// §7.6: unavailable from the old nickname with 303 and the new one, then available from
    /// the new nickname, to everyone; the occupant's own sessions get 110 on both.
    private mutating func changeNick(
        from current: String, to nick: String, session: JID, stanza: XMLElement, assigned: Bool = false, out: inout [XMLElement]
    ) throws(StanzaError) {
        guard occupant(nick) == nil else { throw StanzaError(.conflict, text: "The nickname '\(nick)' is in use in this room.") }
        guard let old = occupant(current) else { return }
        for recipient in allSessions {
            let own = old.sessions.contains(recipient)
            out.append(
                presence(
                    of: old, to: recipient, type: "unavailable", statuses: own ? [.nicknameChanged, .selfPresence] : [.nicknameChanged],
                    newNick: nick))
        }
        rename(current, to: nick)
        self.update(nick) { $0.presence = stanza }
        guard let renamed = occupant(nick) else { return }
        for recipient in allSessions {
            let own: [MUCStatus] = assigned ? [.selfPresence, .nickAssigned] : [.selfPresence]
            out.append(presence(of: renamed, to: recipient, statuses: renamed.sessions.contains(recipient) ? own : []))
        }
    }

    /// §7.2.5–7.2.7: the password, the member list and bans, in the XEP's order; owners and
    /// admins pass the first two.
    private func admit(_ stanza: XMLElement, affiliation: MUCAffiliation) throws(StanzaError) {
        let privileged = affiliation == .owner || affiliation == .admin
        if let password = configuration.password, !privileged {
            let given = stanza.firstChild("x", namespace: MUCNamespace.muc)?.firstChild("password", namespace: MUCNamespace.muc)?.text
            guard let given, ConstantTime.equals(Array(given.utf8), Array(password.utf8)) else {
                throw StanzaError(.notAuthorized, text: "This room needs a password.")
            }
        }
        if configuration.membersOnly, !privileged, affiliation != .member {
            throw StanzaError(.registrationRequired, text: "Only members may enter this room.")
        }
        if affiliation == .outcast { throw StanzaError(.forbidden, text: "You are banned from this room.") }
    }

    /// The `<history/>` of a join (§7.2.14), if it asked for a particular amount.
    static func historyRequest(_ stanza: XMLElement) -> XMLElement? {
        stanza.firstChild("x", namespace: MUCNamespace.muc)?.firstChild("history", namespace: MUCNamespace.muc)
    }

    private func selfStatuses(created: Bool, assignedNick: Bool = false) -> [MUCStatus] {
        var statuses: [MUCStatus] = [.selfPresence]
        if configuration.whois == .anyone { statuses.append(.nonAnonymous) }
        if configuration.archiving { statuses.append(.logged) }
        if created { statuses.append(.created) }
        if assignedNick { statuses.append(.nickAssigned) }
        return statuses
    }

    /// §7.2.15: the subject comes last on entry, empty when there is none.
    func subjectMessage(to session: JID) -> XMLElement {
        var message = XMLElement(
            "message", namespace: XMLNamespace.client,
            ["from": (subject?.from ?? jid).description, "to": session.description, "type": "groupchat", "id": "subject"])
        message.append(XMLElement("subject", text: subject?.text ?? ""))
        return message
    }
}
