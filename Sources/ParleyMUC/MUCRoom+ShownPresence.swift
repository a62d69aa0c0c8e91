import ParleyCore

/// The presence stanzas that make up most of a room's traffic when it fills: every
/// occupant's plain presence to a newcomer, and the newcomer's to everyone (XEP-0045 §7.2.3).
extension MUCRoom {
    /// `occupant`'s presence without a type or status codes, for a recipient at `address`:
    /// a copy of the one built for everyone who sees the same (see `MUCShownPresence`),
    /// with `to` set.
    func shownPresence(of occupant: MUCOccupant, withRealJID: Bool, to address: String) -> XMLElement {
        let affiliation = affiliation(of: occupant.account)
        let box = occupant.shown
        var presence: XMLElement
        if let built = withRealJID ? box.withRealJID : box.plain, built.affiliation == affiliation {
            presence = built.template
        } else {
            let full = self.presence(of: occupant, to: "", withRealJID: withRealJID)
            presence = XMLElement(
                full.name, namespace: full.namespace, attributes: full.attributes,
                children: full.elements.map { .element($0.serializedOnce(in: .clientStream)) })
            let built = MUCShownPresence.Built(affiliation: affiliation, template: presence)
            if withRealJID { box.withRealJID = built } else { box.plain = built }
        }
        presence.to = address
        return presence
    }

    /// Whether sessions of `occupant` see real JIDs in others' presence (§7.2.3, §7.2.4).
    func seesRealJIDs(_ occupant: MUCOccupant) -> Bool {
        configuration.whois == .anyone || occupant.role == .moderator
    }

    /// Every occupant's presence to `session`, which sees real JIDs or not, except `nick`'s
    /// (the newcomer itself, or another device of the same occupant).
    func sendOccupants(to session: JID, withRealJID: Bool, except nick: String?, out: inout [XMLElement]) {
        let address = session.description
        for occupant in occupants.values.sorted(by: { $0.nick < $1.nick }) where occupant.nick != nick {
            out.append(shownPresence(of: occupant, withRealJID: withRealJID, to: address))
        }
    }

    /// `occupant`'s presence to every session in the room but `own` (the occupant's).
    func broadcastShown(_ occupant: MUCOccupant, except own: [JID], out: inout [XMLElement]) {
        for recipient in occupants.values {
            let withRealJID = seesRealJIDs(recipient)
            for other in recipient.sessions where !own.contains(other) {
                out.append(shownPresence(of: occupant, withRealJID: withRealJID, to: other.description))
            }
        }
    }

    /// One presence to every session in the room but `own`, built at most twice (for those
    /// who see real JIDs and those who do not) with `to` empty, and copied with `to` set.
    func broadcast(except own: [JID] = [], out: inout [XMLElement], _ build: (_ withRealJID: Bool) -> XMLElement) {
        var templates: [XMLElement?] = [nil, nil]
        for recipient in occupants.values {
            let withRealJID = seesRealJIDs(recipient)
            let slot = withRealJID ? 1 : 0
            if templates[slot] == nil {
                let full = build(withRealJID)
                templates[slot] = XMLElement(
                    full.name, namespace: full.namespace, attributes: full.attributes,
                    children: full.elements.map { .element($0.serializedOnce(in: .clientStream)) })
            }
            for other in recipient.sessions where !own.contains(other) {
                var copy = templates[slot]!
                copy.to = other.description
                out.append(copy)
            }
        }
    }
}
