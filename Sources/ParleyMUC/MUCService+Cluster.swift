import ParleyCore
import ParleyServer
import ParleyStorage

/// Rooms in a cluster of nodes (ParleyCluster): each room is served by the node holding its
/// lease; every other node hands its stanzas on (`ServicePlacement.route`). The holder
/// records each occupant session (nickname, role, presence) as it joins, changes or leaves,
/// so that a node taking the room over after its holder died restores the occupants whose
/// sessions live on and shows the others leaving (status 333, XEP-0045 §15.6: removed
/// because of a technical problem).
///
/// A temporary room lives only in its holder's memory: when that node dies, the room is
/// gone, and its occupants on the other nodes are told they are out (110 and 333), so their
/// clients join again, which creates the room afresh.
extension MUCService: PlacedService {
    public func placementKey(of address: JID) -> String? { address.localpart }

    public func attach(_ placement: any ServicePlacement) {
        self.placement.withLockedValue { $0 = placement }
    }

    public func receiveDurably(_ stanza: XMLElement, from sender: JID) -> Task<Void, Never>? {
        guard let to = stanza.to.flatMap({ try? JID($0) }) else { return nil }
        if let placement = self.placement.withLockedValue({ $0 }), let key = placementKey(of: to) {
            return placement.route(stanza, from: sender, service: domain, key: key)
        }
        perform { state, out in self.dispatch(stanza, from: sender, to: to, state: &state, out: &out) }
        return nil
    }

    public func serve(_ stanza: XMLElement, from sender: JID, done: @escaping @Sendable () -> Void) {
        guard let to = stanza.to.flatMap({ try? JID($0) }) else { return done() }
        let placement = self.placement.withLockedValue { $0 }
        perform { state, out in
            // Messages other than errors change no occupant: a room's busiest traffic skips
            // the comparison.
            guard let placement, let key = to.localpart, stanza.name != "message" || stanza.type == "error" else {
                return self.dispatch(stanza, from: sender, to: to, state: &state, out: &out)
            }
            let before = Self.members(of: state.rooms[key])
            self.dispatch(stanza, from: sender, to: to, state: &state, out: &out)
            let updated: JID? = stanza.name == "presence" && stanza.type == nil ? sender : nil
            self.record(key, before: before, updated: updated, state: state, placement)
        }
        afterSends(done)
    }

    /// After a session ended: it left the rooms it was in (called under the lock).
    func recordDepartures(of session: JID, from keys: MUCCompactList<String>, state: State) {
        guard let placement = self.placement.withLockedValue({ $0 }) else { return }
        for key in keys where state.rooms[key]?.nick(of: session) == nil {
            placement.record(service: domain, key: key, member: session, data: nil)
        }
    }

    public func adopt(_ key: String, members: [PlacedMember]) async {
        guard let outlet = outlet.withLockedValue({ $0 }) else { return }
        var room: MUCRoom? = nil
        do {
            if let stored = try await outlet.storage.mucRooms(of: domain).first(where: { $0.name == key }) {
                room = try MUCRoom(stored: stored, domain: domain)
            }
            if var loaded = room, loaded.configuration.archiving,
                let tail = try await outlet.storage.mucArchiveTails(service: domain, limit: loaded.historyLimit)[key]
            {
                for (entry, message) in zip(tail, MUCStoredStanza.parseAll(tail.map(\.stanza))) {
                    if let message { loaded.history.append(message, limit: loaded.historyLimit, at: entry.archivedAt) }
                }
                room = loaded
            }
        } catch {
            logger.error("cannot load a room taken over", metadata: ["room": "\(key)@\(domain)", "error": "\(error)"])
        }
        let placement = self.placement.withLockedValue { $0 }
        perform { state, out in
            // Whatever this node kept of the room (the copy loaded at start, an earlier lease)
            // is older than what was just read.
            for session in state.rooms[key]?.allSessions ?? [] { self.forgetSession(session, in: key, state: &state) }
            state.rooms[key] = room
            let restored = Self.restore(members, into: &state.rooms[key], jid: (try? JID(localpart: key, domainpart: self.domain)), out: &out)
            for session in restored { state.roomsBySession[session, default: []].insert(state.roomKey(key)) }
            for member in members where !restored.contains(member.jid) {
                placement?.record(service: domain, key: key, member: member.jid, data: nil)
            }
        }
    }

    public func sessionsLost(_ sessions: [JID]) {
        perform { state, out in
            for session in sessions {
                let rooms = state.roomsBySession.removeValue(forKey: session) ?? []
                for key in rooms {
                    state.rooms[key]?.removeForTechnicalReason(session, out: &out)
                    self.closeIfEmpty(key, state: &state)
                }
                if !rooms.isEmpty { self.recordDepartures(of: session, from: rooms, state: state) }
            }
        }
    }

    public func release(_ key: String) {
        perform { state, _ in
            for session in state.rooms[key]?.allSessions ?? [] { self.forgetSession(session, in: key, state: &state) }
            state.rooms[key] = nil
        }
    }

    // MARK: Members

    /// What is recorded of each session in a room, but for its presence: nickname and role.
    private static func members(of room: MUCRoom?) -> [JID: String] {
        guard let room else { return [:] }
        var members: [JID: String] = [:]
        for occupant in room.occupants.values {
            for session in occupant.sessions { members[session] = occupant.nick + "\n" + occupant.role.rawValue }
        }
        return members
    }

    private func record(_ key: String, before: [JID: String], updated: JID?, state: State, _ placement: any ServicePlacement) {
        let room = state.rooms[key]
        let after = Self.members(of: room)
        for (session, member) in after where before[session] != member || session == updated {
            guard let room, let nick = room.nick(of: session), let occupant = room.occupant(nick) else { continue }
            placement.record(
                service: domain, key: key, member: session, data: member + "\n" + StoredStanza.serialize(occupant.presence))
        }
        for session in before.keys where after[session] == nil {
            placement.record(service: domain, key: key, member: session, data: nil)
        }
    }

    private func forgetSession(_ session: JID, in key: String, state: inout State) {
        state.roomsBySession[session]?.remove(key)
        if state.roomsBySession[session]?.isEmpty == true { state.roomsBySession[session] = nil }
    }

    /// Puts the recorded occupants back into `room`; returns the sessions restored. Those
    /// whose sessions are gone are shown leaving; without a room (a temporary one, lost),
    /// those still there are told they are out.
    private static func restore(_ members: [PlacedMember], into room: inout MUCRoom?, jid: JID?, out: inout [XMLElement]) -> Set<JID> {
        var parsed: [(member: PlacedMember, nick: String, role: MUCRole, presence: XMLElement)] = []
        for member in members {
            let fields = member.data.split(separator: "\n", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3, let role = MUCRole(rawValue: String(fields[1])),
                let presence = StoredStanza.parse(String(fields[2]))
            else { continue }
            parsed.append((member, String(fields[0]), role, presence))
        }
        guard var current = room else {
            guard let jid else { return [] }
            for entry in parsed where entry.member.alive {
                out.append(lostRoomPresence(from: (try? jid.with(resource: entry.nick)) ?? jid, to: entry.member.jid))
            }
            return []
        }
        for entry in parsed {
            let session = entry.member.jid
            if let nick = current.nick(of: session), nick == entry.nick { continue }
            if let existing = current.occupant(entry.nick) {
                guard existing.account == session.bare else { continue }
                current.addSession(session, to: entry.nick)
            } else {
                current.add(
                    MUCOccupant(
                        nick: entry.nick, account: session.bare, sessions: [session], role: entry.role,
                        id: current.occupantID(for: session), presence: entry.presence))
            }
        }
        var restored = Set<JID>()
        for entry in parsed where current.nick(of: entry.member.jid) != nil {
            if entry.member.alive {
                restored.insert(entry.member.jid)
            } else {
                current.removeForTechnicalReason(entry.member.jid, out: &out)
            }
        }
        room = current
        return restored
    }

    /// To an occupant of a temporary room whose node died: its own unavailable presence
    /// with 110 and 333, from its occupant JID.
    private static func lostRoomPresence(from occupant: JID, to session: JID) -> XMLElement {
        var presence = XMLElement(
            "presence", namespace: XMLNamespace.client, ["from": occupant.description, "to": session.description, "type": "unavailable"])
        var x = XMLElement("x", namespace: MUCNamespace.user)
        x.append(XMLElement("item", namespace: MUCNamespace.user, ["affiliation": "none", "role": "none"]))
        x.append(XMLElement("status", namespace: MUCNamespace.user, ["code": String(MUCStatus.selfPresence.rawValue)]))
        x.append(XMLElement("status", namespace: MUCNamespace.user, ["code": String(MUCStatus.technicalRemoval.rawValue)]))
        presence.append(x)
        return presence
    }
}
