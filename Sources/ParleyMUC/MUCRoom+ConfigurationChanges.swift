import ParleyCore

/// What a change of configuration tells the occupants (XEP-0045 §10.2, §10.2.1): a room
/// that became members-only removes those who are not on its lists (322); then everyone
/// gets one message from the room with the codes of what changed, 172 or 173 when real JIDs
/// became visible to everyone or only to moderators, 104 for any other change, so clients
/// can fetch the new configuration.
extension MUCRoom {
    /// Call after `configuration` replaced `old`; returns the sessions removed.
    mutating func configurationChanged(from old: MUCRoomConfiguration, out: inout [XMLElement]) -> [JID] {
        var removed: [JID] = []
        if configuration.membersOnly, !old.membersOnly {
            for occupant in occupants.values.sorted(by: { $0.nick < $1.nick }) where affiliation(of: occupant.account) == .none {
                removed += removeOccupant(occupant, statuses: [.removedMembersOnly], actor: nil, reason: nil, out: &out)
            }
        }
        var codes: [MUCStatus] = []
        var others = configuration
        others.whois = old.whois
        others.archiving = old.archiving
        if others != old { codes.append(.configurationChanged) }
        if configuration.whois != old.whois { codes.append(configuration.whois == .anyone ? .nowNonAnonymous : .nowSemiAnonymous) }
        // §10.2.1: logging switched is privacy-related, told in the same notice (170/171), not as 104.
        if configuration.archiving != old.archiving { codes.append(configuration.archiving ? .logged : .loggingDisabled) }
        guard !codes.isEmpty else { return removed }
        let x = XMLElement(
            "x", namespace: MUCNamespace.user, [:],
            codes.map { XMLElement("status", namespace: MUCNamespace.user, ["code": String($0.rawValue)]) })
        for session in allSessions.sorted(by: { $0.description < $1.description }) {
            out.append(
                XMLElement(
                    "message", namespace: XMLNamespace.client,
                    ["from": jid.description, "to": session.description, "type": "groupchat"], [x]))
        }
        return removed
    }
}
