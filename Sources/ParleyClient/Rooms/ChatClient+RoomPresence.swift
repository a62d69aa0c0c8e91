import Foundation
import ParleyCore

/// Presence from rooms (XEP-0045 §7.2–7.6, §8, §9, §10.9): the occupant list, our own
/// entry, nickname changes, and removals by kick, ban or destruction.
extension ChatClient {
    /// Handles presence from a room we are in or entering; false for anything else.
    func handleRoomPresence(_ stanza: XMLElement) async -> Bool {
        guard let address = stanza.from, let from = try? JID(address), let state = muc.rooms[from.bare] else { return false }
        let room = from.bare
        if stanza.type == "error" {
            let error = StanzaError(stanza: stanza) ?? StanzaError(.undefinedCondition)
            if muc.joins[room] != nil {
                finishJoin(room, .failure(ClientError.refused(error)))
            } else {
                // A refused nickname change or presence update: we stay in under the old name.
                await emit(.stanzaError(id: stanza.id, from: from, error: error))
            }
            return true
        }
        guard let nick = from.resourcepart else { return true }
        let x = stanza.firstChild("x", namespace: RoomNamespace.user)
        let item = x?.firstChild("item", namespace: RoomNamespace.user)
        let codes = Set(x?.children("status", namespace: RoomNamespace.user).compactMap { $0[attribute: "code"].flatMap(Int.init) } ?? [])
        let occupant = Self.occupant(nick, stanza, item)
        let isSelf = codes.contains(RoomStatus.selfPresence) || (nick == state.nick && !state.inRoom)
        if stanza.type == "unavailable" {
            await occupantUnavailable(room, occupant, x: x, item: item, codes: codes, isSelf: isSelf)
        } else if stanza.type == nil {
            await occupantAvailable(room, occupant, codes: codes, isSelf: isSelf)
        }
        return true
    }

    private func occupantAvailable(_ room: JID, _ occupant: RoomOccupant, codes: Set<Int>, isSelf: Bool) async {
        guard var state = muc.rooms[room] else { return }
        let before = state.occupants[occupant.nick]
        state.occupants[occupant.nick] = occupant
        if isSelf {
            // §7.2.3 (status 210): the room may have changed the nickname we asked for.
            state.nick = occupant.nick
            if !state.inRoom {
                state.inRoom = true
                state.created = codes.contains(RoomStatus.created)
                muc.rooms[room] = state
                // A new room has no history or subject to wait for.
                if state.created { await roomEntered(room) }
                return
            }
        }
        muc.rooms[room] = state
        guard state.inRoom else { return }  // the occupant list before our own presence
        if before == nil {
            await emit(.room(.occupantJoined(room: room, occupant)))
        } else if before != occupant {
            await emit(.room(.occupantChanged(room: room, occupant)))
        }
    }

    private func occupantUnavailable(
        _ room: JID, _ occupant: RoomOccupant, x: XMLElement?, item: XMLElement?, codes: Set<Int>, isSelf: Bool
    ) async {
        guard var state = muc.rooms[room] else { return }
        if codes.contains(RoomStatus.nicknameChanged), let newNick = item?[attribute: "nick"] {
            // §7.6: the available presence under the new name follows; we only rename.
            var renamed = state.occupants.removeValue(forKey: occupant.nick) ?? occupant
            renamed.nick = newNick
            state.occupants[newNick] = renamed
            if isSelf { state.nick = newNick }
            muc.rooms[room] = state
            await emit(.room(.nickChanged(room: room, from: occupant.nick, to: newNick)))
            return
        }
        let removal = Self.removal(x: x, item: item, codes: codes)
        if isSelf {
            muc.rooms[room] = nil
            if muc.joins[room] != nil {
                finishJoin(room, .failure(ClientError.refused(StanzaError(.undefinedCondition, text: "The room sent us out while we were entering it."))))
                return
            }
            if state.leaving || removal == nil {
                await emit(.room(.left(room: room)))
            } else if let removal {
                await emit(.room(.removed(room: room, removal)))
            }
            return
        }
        state.occupants[occupant.nick] = nil
        muc.rooms[room] = state
        await emit(.room(.occupantLeft(room: room, occupant, removal: removal)))
    }

    static func occupant(_ nick: String, _ stanza: XMLElement, _ item: XMLElement?) -> RoomOccupant {
        var show = stanza.firstChild("show").flatMap { PresenceUpdate.Show(rawValue: $0.text) } ?? .available
        if stanza.type == "unavailable" { show = .unavailable }
        return RoomOccupant(
            nick: nick, role: item?[attribute: "role"].flatMap(RoomRole.init(rawValue:)) ?? .none,
            affiliation: item?[attribute: "affiliation"].flatMap(RoomAffiliation.init(rawValue:)) ?? .none,
            realJID: item?[attribute: "jid"].flatMap { try? JID($0) },
            occupantID: stanza.firstChild("occupant-id", namespace: RoomNamespace.occupantID)?[attribute: "id"],
            show: show, status: stanza.firstChild("status")?.text)
    }

    /// Why an unavailable presence took an occupant out, from its status codes or `<destroy/>`.
    static func removal(x: XMLElement?, item: XMLElement?, codes: Set<Int>) -> RoomRemoval? {
        let actor = item?.firstChild("actor", namespace: RoomNamespace.user)?[attribute: "nick"]
        let reason = item?.firstChild("reason", namespace: RoomNamespace.user)?.text
        if let destroy = x?.firstChild("destroy", namespace: RoomNamespace.user) {
            return .destroyed(
                reason: destroy.firstChild("reason", namespace: RoomNamespace.user)?.text, alternateVenue: destroy[attribute: "jid"].flatMap { try? JID($0) })
        }
        if codes.contains(RoomStatus.banned) { return .banned(by: actor, reason: reason) }
        if codes.contains(RoomStatus.kicked) { return .kicked(by: actor, reason: reason) }
        if codes.contains(RoomStatus.removedByAffiliationChange) { return .affiliationChanged }
        if codes.contains(RoomStatus.removedMembersOnly) { return .membersOnly }
        if codes.contains(RoomStatus.removedShutdown) { return .serviceShutdown }
        return nil
    }

    /// The subject came (the end of the entry, §7.2.15), or the room was created: we are in.
    func roomEntered(_ room: JID) async {
        guard var state = muc.rooms[room] else { return }
        let rejoining = state.rejoining
        state.rejoining = false
        state.entered = true
        muc.rooms[room] = state
        await persist { try await $0.addRoom(room) }
        if rejoining {
            await emit(.room(.rejoined(room: room, nick: state.nick)))
        } else {
            await emit(.room(.joined(state.summary)))
        }
        finishJoin(room, .success(state.summary))
    }
}
