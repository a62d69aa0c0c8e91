import ParleyCore

/// The presence stanzas a room sends about its occupants (XEP-0045 §7.2).
extension MUCRoom {
    /// Presence of `occupant` for `recipient` (a session in the room): the occupant's own
    /// show/status/caps, its `<x xmlns='…muc#user'>` item (the real JID only for those
    /// allowed to see it), the status codes, and its XEP-0421 occupant id.
    func presence(
        of occupant: MUCOccupant, to recipient: JID, type: String? = nil, statuses: [MUCStatus] = [], newNick: String? = nil,
        role: MUCRole? = nil, affiliation: MUCAffiliation? = nil, extra: [XMLElement] = [], itemChildren: [XMLElement] = []
    ) -> XMLElement {
        presence(
            of: occupant, to: recipient.description, withRealJID: maySee(realJIDsAs: recipient), type: type, statuses: statuses,
            newNick: newNick, role: role, affiliation: affiliation, extra: extra, itemChildren: itemChildren)
    }

    /// The same, for a recipient given by its address and what it may see.
    func presence(
        of occupant: MUCOccupant, to recipient: String, withRealJID: Bool, type: String? = nil, statuses: [MUCStatus] = [],
        newNick: String? = nil, role: MUCRole? = nil, affiliation: MUCAffiliation? = nil, extra: [XMLElement] = [],
        itemChildren: [XMLElement] = []
    ) -> XMLElement {
        var presence = XMLElement(
            "presence", namespace: XMLNamespace.client, ["from": occupantJID(occupant.nick).description, "to": recipient])
        if let type { presence.setAttribute("type", type) }
        for child in occupant.presence.elements where Self.isForwarded(child, unavailable: type == "unavailable") {
            presence.append(child)
        }
        var item = XMLElement(
            "item", namespace: MUCNamespace.user,
            ["affiliation": (affiliation ?? self.affiliation(of: occupant.account)).rawValue, "role": (role ?? occupant.role).rawValue])
        if withRealJID { item.setAttribute("jid", occupant.realJID.description) }
        if let newNick { item.setAttribute("nick", newNick) }
        for child in itemChildren { item.append(child) }
        var x = XMLElement("x", namespace: MUCNamespace.user, [:], [item])
        for status in statuses { x.append(XMLElement("status", namespace: MUCNamespace.user, ["code": String(status.rawValue)])) }
        for element in extra { x.append(element) }
        presence.append(x)
        presence.append(XMLElement("occupant-id", namespace: MUCNamespace.occupantID, ["id": occupant.occupantID]))
        return presence
    }

    /// Whether the session `recipient` may see occupants' real JIDs (§7.2.3, §7.2.4).
    func maySee(realJIDsAs recipient: JID) -> Bool {
        if configuration.whois == .anyone { return true }
        guard let nick = nick(of: recipient) else { return false }
        return occupant(nick)?.role == .moderator
    }

    /// What of an occupant's own presence others see: show, status, priority-free IM
    /// payloads; never the MUC elements it sent to the room or ones it forged.
    private static func isForwarded(_ child: XMLElement, unavailable: Bool) -> Bool {
        switch child.namespace {
        case MUCNamespace.muc, MUCNamespace.user, MUCNamespace.occupantID: return false
        case XMLNamespace.client: return child.name == "status" || (!unavailable && child.name == "show")
        default: return !unavailable
        }
    }
}
