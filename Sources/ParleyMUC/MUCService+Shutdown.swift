import ParleyCore

/// A graceful shutdown (XEP-0045 status 332): before the server closes the connections,
/// every occupant is told it is no longer in its rooms because the service is going away,
/// so clients show the room as left for that reason and rejoin when the server is back.
extension MUCService {
    public func serverStopping() {
        // In a cluster the rooms outlive this node: its occupants leave as their sessions
        // end, the others stay, and another node serves the rooms next.
        guard placement.withLockedValue({ $0 }) == nil else { return }
        perform { state, out in
            for key in state.rooms.keys.sorted() {
                guard var room = state.rooms[key] else { continue }
                room.removeEveryone(out: &out)
                state.rooms[key] = room
                // Only persistent rooms outlive their occupants.
                if !room.configuration.persistent || room.locked { state.rooms[key] = nil }
            }
            state.roomsBySession = [:]
        }
    }
}

extension MUCRoom {
    /// Each session gets its own occupant's unavailable presence with 332 and 110. Telling
    /// everyone of everyone else too would cost the square of the room's size for nothing:
    /// the whole room is going.
    mutating func removeEveryone(out: inout [XMLElement]) {
        for occupant in occupants.values.sorted(by: { $0.nick < $1.nick }) {
            for session in occupant.sessions {
                out.append(
                    presence(of: occupant, to: session, type: "unavailable", statuses: [.systemShutdown, .selfPresence], role: MUCRole.none))
            }
            for session in occupant.sessions { _ = removeSession(session) }
        }
    }
}
