import Foundation
import ParleyCore

/// Staying in rooms across reconnects. A room forgets an occupant whose session ended, and
/// may forget one it lost track of (a server restart, a lost stanza); XEP-0410 self-ping
/// asks the room whether our occupant JID is still in it, and a rejoin asks only for the
/// history since the last message seen, so the gap is filled without duplicates.
extension ChatClient {
    /// Runs after every (re)connect: pings each room we were in and enters those that no
    /// longer have us.
    func checkRooms() async {
        for (room, state) in muc.rooms where (state.inRoom || state.rejoining) && !state.leaving && muc.joins[room] == nil {
            if await stillInRoom(room, nick: state.nick) { continue }
            await rejoin(room)
        }
    }

    /// XEP-0410 §4: a result, or an error that only the occupant's client could have given
    /// (the room passed the ping on), means we are in; any other error or none means not.
    func stillInRoom(_ room: JID, nick: String) async -> Bool {
        guard let occupant = try? Self.occupantJID(room, nick) else { return false }
        let ping = XMLElement("iq", namespace: XMLNamespace.client, ["type": "get", "to": occupant.description], [XMLElement("ping", namespace: XMLNamespace.ping)])
        do {
            _ = try await xmpp.request(ping, timeout: .seconds(15))
            return true
        } catch let error as StanzaError {
            return error.condition == .serviceUnavailable || error.condition == .featureNotImplemented
        } catch {
            return false
        }
    }

    private func rejoin(_ room: JID) async {
        guard var state = muc.rooms[room], let occupant = try? Self.occupantJID(room, state.nick) else { return }
        // A few seconds of overlap for clocks that disagree; repeats are recognized by id.
        let since = state.lastActivity.map { $0.addingTimeInterval(-5) }
        state.inRoom = false
        state.entered = false
        state.rejoining = true
        state.occupants = [:]
        muc.rooms[room] = state
        let presence = Self.joinPresence(to: occupant, password: state.password, history: since.map { RoomHistoryRequest(since: $0) })
        do {
            _ = try await awaitJoin(room) { await self.send(presence) }
        } catch ClientError.refused(let error) {
            muc.rooms[room] = nil
            // Banned or the room gone meanwhile: the application learns we are out.
            await emit(.room(.removed(room: room, Self.removalForRefusedRejoin(error))))
        } catch {
            logger.warning("rejoining \(room) failed", metadata: ["error": "\(error)"])
        }
    }

    private static func removalForRefusedRejoin(_ error: StanzaError) -> RoomRemoval {
        switch error.condition {
        case .forbidden: .banned(by: nil, reason: error.text)
        case .registrationRequired: .membersOnly
        case .itemNotFound, .gone: .destroyed(reason: error.text, alternateVenue: nil)
        default: .kicked(by: nil, reason: error.text)
        }
    }
}
