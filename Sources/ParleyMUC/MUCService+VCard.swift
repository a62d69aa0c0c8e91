import ParleyCore

/// vcard-temp on the room JID (XEP-0054 for a room, XEP-0486): anyone who may see the room
/// reads it; its owners alone change it, and a persistent room keeps it.
extension MUCService {
    func vCardRequest(_ stanza: XMLElement, _ payload: XMLElement, from sender: JID, room key: String, state: inout State, out: inout [XMLElement]) {
        guard var room = state.rooms[key], !room.locked || room.nick(of: sender) != nil else {
            return refuse(stanza, StanzaError(.itemNotFound, text: "There is no room \(key)@\(domain)."), out: &out)
        }
        if stanza.type == "get" {
            // XEP-0054 lets a missing vCard be an empty one: so an avatar an owner took away
            // (by an empty vCard) reads back as what was set, not as an error.
            return out.append(stanza.iqResult(room.vCardElement ?? XMLElement("vCard", namespace: MUCNamespace.vCard)))
        }
        guard room.affiliation(of: sender) == .owner else {
            return refuse(stanza, StanzaError(.forbidden, text: "Only the room's owners may change its vCard."), out: &out)
        }
        do throws(StanzaError) {
            let previous = room.avatar?.photoHash
            room.avatar = try MUCRoom.avatar(from: payload, maxBytes: settings.maxVCardBytes)
            state.rooms[key] = room
            persist(key, wasPersistent: room.configuration.persistent && !room.locked, state: &state)
            out.append(stanza.iqResult())
            if room.avatar?.photoHash != previous { room.announceAvatar(out: &out) }
        } catch {
            refuse(stanza, error, out: &out)
        }
    }
}
