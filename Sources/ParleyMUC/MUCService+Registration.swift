import ParleyCore

/// Registration with a room (XEP-0045 §7.10) as the service runs it: the change is made on
/// a copy, so a refused request changes nothing, and a persistent room stores the result.
extension MUCService {
    func register(
        _ stanza: XMLElement, _ query: XMLElement, from sender: JID, room key: String, state: inout State, out: inout [XMLElement]
    ) {
        guard let room = state.rooms[key], !room.locked else {
            return refuse(stanza, StanzaError(.itemNotFound, text: "There is no room \(key)@\(domain)."), out: &out)
        }
        do throws(StanzaError) {
            if stanza.type == "get" {
                return out.append(stanza.iqResult(try room.registrationQuery(for: sender, policy: settings.nicknames)))
            }
            let wasPersistent = room.configuration.persistent
            var changed = room
            var notices: [XMLElement] = []
            let outcome = try changed.register(query, from: sender, policy: settings.nicknames, out: &notices)
            state.rooms[key] = changed
            out.append(stanza.iqResult())
            out.append(contentsOf: notices)
            for session in outcome.removedSessions { state.roomsBySession[session]?.remove(key) }
            if outcome.affiliationsChanged { persist(key, wasPersistent: wasPersistent, state: &state) }
        } catch {
            refuse(stanza, error, out: &out)
        }
    }
}
