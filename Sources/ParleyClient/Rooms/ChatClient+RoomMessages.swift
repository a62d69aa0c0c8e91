import Foundation
import ParleyCore

/// Messages from rooms (XEP-0045 §7.2.15, §7.4, §7.5, §8.1) and invitations to rooms
/// (§7.8.2 mediated, XEP-0249 direct).
extension ChatClient {
    /// Handles a room message, a private message from an occupant, an invitation or a
    /// decline; false for anything else (one-to-one messages, errors).
    func handleRoomMessage(_ stanza: XMLElement) async -> Bool {
        guard let address = stanza.from, let from = try? JID(address) else { return false }
        if await handleInvitation(stanza, from: from) { return true }
        let room = from.bare
        guard muc.rooms[room] != nil else { return false }
        if stanza.type == "error" {
            if let id = stanza.id, muc.echoes[id] != nil {
                finishEcho(id, .failure(ClientError.refused(StanzaError(stanza: stanza) ?? StanzaError(.undefinedCondition))))
                return true
            }
            return false  // reported as `.stanzaError` with the message's id
        }
        if stanza.type == "groupchat" {
            await groupchat(stanza, room: room, nick: from.resourcepart)
            return true
        }
        if let nick = from.resourcepart, stanza.firstChild("x", namespace: RoomNamespace.user) != nil,
            let body = stanza.firstChild("body")?.text
        {
            let message = RoomMessage(
                room: room, nick: nick, body: body, id: stanza.id,
                occupantID: stanza.firstChild("occupant-id", namespace: RoomNamespace.occupantID)?[attribute: "id"],
                media: MediaAttachment(message: stanza))
            await emit(.room(.privateMessage(message)))
            return true
        }
        return false
    }

    private func groupchat(_ stanza: XMLElement, room: JID, nick: String?) async {
        guard var state = muc.rooms[room] else { return }
        let body = stanza.firstChild("body")?.text
        // XEP-0045 §8.1: with a body or a thread, a subject is part of a message, not a change.
        if let subject = stanza.firstChild("subject"), body == nil, stanza.firstChild("thread") == nil {
            let text = subject.text
            if let id = stanza.id { finishEcho(id, .success(())) }
            if let pending = muc.subjectChanges[room], pending.text == text, nick == state.nick { finishEcho(pending.id, .success(())) }
            let changed = text != (state.subject ?? "")
            state.subject = text.isEmpty ? nil : text
            muc.rooms[room] = state
            if !state.entered {
                if state.inRoom { await roomEntered(room) }
            } else if changed {
                await emit(.room(.subjectChanged(room: room, subject: text, by: nick)))
            }
            return
        }
        guard let body else { return }
        let stanzaID = stanza.children("stanza-id", namespace: XMLNamespace.stanzaID).first { $0[attribute: "by"] == room.description }?[attribute: "id"]
        let originID = stanza.firstChild("origin-id", namespace: XMLNamespace.stanzaID)?[attribute: "id"]
        let delayed = stanza.children("delay", namespace: XMLNamespace.delay).first?[attribute: "stamp"].flatMap(IncomingMessage.parseStamp)
        let isOwn = nick != nil && nick == state.nick
        let message = RoomMessage(
            room: room, nick: nick, body: body, id: stanza.id, stanzaID: stanzaID,
            occupantID: stanza.firstChild("occupant-id", namespace: RoomNamespace.occupantID)?[attribute: "id"], delayedUntil: delayed,
            isOwn: isOwn, mentionsMe: !isOwn && Self.mentions(body, state.nick), media: MediaAttachment(message: stanza))
        let timestamp = delayed ?? Date()
        state.lastActivity = max(state.lastActivity ?? timestamp, timestamp)
        // Seen already (history replayed on a rejoin, or the echo of our own message).
        var isNew = true
        for key in [stanzaID, originID ?? stanza.id].compactMap({ $0 }) where !state.remember(key) { isNew = false }
        muc.rooms[room] = state
        if let cache = self.cache {
            let record = MessageRecord(
                peer: room, direction: isOwn ? .outgoing : .incoming, id: stanza.id, originID: originID, stanzaID: stanzaID, body: body,
                timestamp: timestamp, media: message.media)
            do {
                let outcome = try await cache.storeRoomMessage(record, nick: nick ?? "")
                isNew = outcome.isNew
                if let acknowledged = outcome.acknowledged { await emit(.sent(messageID: acknowledged)) }
            } catch {
                logger.error("cache write failed", metadata: ["error": "\(error)"])
            }
        }
        if isNew { await emit(.room(.message(message))) }
    }

    /// Whether `body` names `nick` as a word (case-insensitive), the way chat clients
    /// highlight a mention.
    static func mentions(_ body: String, _ nick: String) -> Bool {
        guard !nick.isEmpty else { return false }
        var searchRange = body.startIndex..<body.endIndex
        while let found = body.range(of: nick, options: [.caseInsensitive], range: searchRange) {
            let before = found.lowerBound == body.startIndex ? nil : body[body.index(before: found.lowerBound)]
            let after = found.upperBound == body.endIndex ? nil : body[found.upperBound]
            let isBoundary: (Character?) -> Bool = { $0 == nil || !($0!.isLetter || $0!.isNumber) }
            if isBoundary(before), isBoundary(after) { return true }
            searchRange = found.upperBound..<body.endIndex
        }
        return false
    }

    /// §7.8.2 (from the room: `<invite/>` or `<decline/>`) and XEP-0249 (from the inviter).
    private func handleInvitation(_ stanza: XMLElement, from: JID) async -> Bool {
        guard stanza.type != "error", stanza.type != "groupchat" else { return false }
        if let x = stanza.firstChild("x", namespace: RoomNamespace.user), from.isBare, from.localpart != nil {
            if let invite = x.firstChild("invite", namespace: RoomNamespace.user) {
                guard let inviter = invite[attribute: "from"].flatMap({ try? JID($0) }) else { return true }
                // A room that hides real JIDs names the inviter by occupant JID (Prosody does).
                let invitation = RoomInvitation(
                    room: from, from: inviter.bare == from ? inviter : inviter.bare, reason: invite.firstChild("reason", namespace: RoomNamespace.user)?.text,
                    password: x.firstChild("password", namespace: RoomNamespace.user)?.text, isDirect: false)
                await emit(.room(.invited(invitation)))
                return true
            }
            if let decline = x.firstChild("decline", namespace: RoomNamespace.user) {
                guard let decliner = decline[attribute: "from"].flatMap({ try? JID($0) }) else { return true }
                await emit(.room(.invitationDeclined(
                    room: from, by: decliner.bare, reason: decline.firstChild("reason", namespace: RoomNamespace.user)?.text)))
                return true
            }
        }
        if let x = stanza.firstChild("x", namespace: RoomNamespace.conference) {
            guard let room = x[attribute: "jid"].flatMap({ try? JID($0) }), room.localpart != nil else { return true }
            let invitation = RoomInvitation(
                room: room.bare, from: from.bare, reason: x[attribute: "reason"], password: x[attribute: "password"], isDirect: true)
            await emit(.room(.invited(invitation)))
            return true
        }
        return false
    }
}
