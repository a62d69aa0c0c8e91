import ParleyCore

/// The presence stanzas that make up most of a room's traffic when it fills: every
/// occupant's plain presence to a newcomer, and the newcomer's to everyone (XEP-0045 §7.2.3).
extension MUCRoom {
    /// `occupant`'s presence without a type or status codes, as everyone who sees the same
    /// gets it (see `MUCShownPresences`): serialized once, each copy only adds its `to`; and
    /// its `from`, the occupant's JID in the room.
    func shownPresence(of occupant: MUCOccupant, withRealJID: Bool) -> (template: XMLStanzaTemplate, from: JID) {
        let affiliation = affiliation(of: occupant.account)
        shownPresences.recently = true
        if let kept = shownPresences.template(of: occupant, withRealJID: withRealJID, affiliation: affiliation) {
            return kept
        }
        let template = Self.template(presence(of: occupant, to: "", withRealJID: withRealJID))
        let from = occupantJID(occupant.nick)
        shownPresences.keep(template, from: from, of: occupant, withRealJID: withRealJID, affiliation: affiliation)
        return (template, from)
    }

    /// Lets every occupant's shown presence go if none was used since the last call (a
    /// room that nobody entered or changed presence in meanwhile): they make a fill cheap,
    /// but a quiet room would keep two serialized stanzas per occupant for nothing. Returns
    /// whether it released anything. The service calls it every few seconds.
    func releaseShownPresences() -> Bool {
        guard shownPresences.kept else { return false }
        if shownPresences.recently {
            shownPresences.recently = false
            return false
        }
        shownPresences.release()
        return true
    }

    /// How many occupants keep a shown presence (for tests).
    var occupantsWithShownPresence: Int {
        occupants.values.reduce(0) { count, occupant in
            let kept = [true, false].contains {
                shownPresences.template(of: occupant, withRealJID: $0, affiliation: affiliation(of: occupant.account)) != nil
            }
            return count + (kept ? 1 : 0)
        }
    }

    /// A stanza built with an empty `to`, made a template that each recipient's copy adds
    /// its `to` to.
    static func template(_ stanza: XMLElement) -> XMLStanzaTemplate {
        var stanza = stanza
        stanza.setAttribute("to", nil)
        return XMLStanzaTemplate(stanza, context: .clientStream)
    }

    /// Whether sessions of `occupant` see real JIDs in others' presence (§7.2.3, §7.2.4).
    func seesRealJIDs(_ occupant: MUCOccupant) -> Bool {
        configuration.whois == .anyone || occupant.role == .moderator
    }

    /// Every occupant's presence to `session`, which sees real JIDs or not, except `nick`'s
    /// (the newcomer itself, or another device of the same occupant), in the order of their
    /// nicknames (kept in order as occupants come and go: `nicksInOrder`). Returns the copies'
    /// addresses when there are `runsFrom` or more of them.
    @discardableResult
    func sendOccupants(
        to session: JID, withRealJID: Bool, except nick: String?, out: inout [XMLElement],
        runsFrom minimum: Int = MUCAddressedRun.minimumCount
    ) -> MUCAddressedRun? {
        let to = recipientsBySession[session]?.to ?? MUCRecipient.to(session)
        let start = out.count
        let addressed = nicksInOrder.count - (nick == nil ? 0 : 1) >= minimum
        var senders: [JID] = []
        if addressed { senders.reserveCapacity(nicksInOrder.count) }
        for other in nicksInOrder where other != nick {
            guard let occupant = occupants[other] else { continue }
            let shown = shownPresence(of: occupant, withRealJID: withRealJID)
            out.append(shown.template.instance(to))
            if addressed { senders.append(shown.from) }
        }
        return addressed ? MUCAddressedRun(start: start, addresses: .fanIn(from: senders, to: session)) : nil
    }

    /// `occupant`'s presence to every session in the room but `own` (the occupant's). Returns
    /// the copies' addresses when there are `runsFrom` or more of them.
    @discardableResult
    func broadcastShown(
        _ occupant: MUCOccupant, except own: MUCCompactList<JID>, out: inout [XMLElement],
        runsFrom minimum: Int = MUCAddressedRun.minimumCount
    ) -> MUCAddressedRun? {
        var templates: [XMLStanzaTemplate?] = [nil, nil]
        var from: JID?
        let everyoneSeesRealJIDs = configuration.whois == .anyone
        let start = out.count
        let addressed = recipientsBySession.count - own.count >= minimum
        var sessions: [JID] = []
        if addressed { sessions.reserveCapacity(recipientsBySession.count) }
        for (session, recipient) in recipientsBySession where !own.contains(session) {
            let withRealJID = everyoneSeesRealJIDs || recipient.isModerator
            let slot = withRealJID ? 1 : 0
            if templates[slot] == nil { (templates[slot], from) = shownPresence(of: occupant, withRealJID: withRealJID) }
            out.append(templates[slot].unsafelyUnwrapped.instance(recipient.to ?? MUCRecipient.to(session)))
            if addressed { sessions.append(session) }
        }
        guard addressed else { return nil }
        return MUCAddressedRun(start: start, addresses: .fanOut(from: from ?? occupantJID(occupant.nick), to: sessions))
    }

    /// One presence to every session in the room but `own`, built at most twice (for those
    /// who see real JIDs and those who do not) and copied with `to` set.
    func broadcast(except own: [JID] = [], out: inout [XMLElement], _ build: (_ withRealJID: Bool) -> XMLElement) {
        var templates: [XMLStanzaTemplate?] = [nil, nil]
        let everyoneSeesRealJIDs = configuration.whois == .anyone
        for (session, recipient) in recipientsBySession where !own.contains(session) {
            let withRealJID = everyoneSeesRealJIDs || recipient.isModerator
            let slot = withRealJID ? 1 : 0
            if templates[slot] == nil { templates[slot] = Self.template(build(withRealJID)) }
            out.append(templates[slot]!.instance(recipient.to ?? MUCRecipient.to(session)))
        }
    }
}
