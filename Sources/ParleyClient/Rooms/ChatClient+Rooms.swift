import Foundation
import ParleyCore

/// Group chat (XEP-0045), the occupant's side: entering and leaving rooms, talking in them,
/// private messages, the subject. Works with any XEP-0045 service (parleyd, Prosody,
/// ejabberd): everything is plain presence and messages to `room@service/nick`.
extension ChatClient {
    static let roomJoinTimeout = Duration.seconds(30)

    /// Enters `room` as `nick` and returns once the room has sent the occupant list, the
    /// history and the subject (§7.2). A room this join created (status 201) is made an
    /// instant room with the service's default configuration when `instant` is true;
    /// otherwise it stays locked until `configureRoom` (§10.1.3).
    /// Throws `ClientError.refused` with the room's error: `conflict` (nickname taken),
    /// `not-authorized` (password), `registration-required` (members only), `forbidden`
    /// (banned), `service-unavailable` (full), `item-not-found` (locked).
    @discardableResult
    public func join(
        _ room: JID, nick: String, password: String? = nil, history: RoomHistoryRequest? = nil, instant: Bool = true
    ) async throws -> JoinedRoom {
        let room = room.bare
        let occupantJID = try Self.occupantJID(room, nick)
        if let existing = muc.rooms[room], existing.inRoom, !existing.leaving {
            guard existing.nick != nick else { return existing.summary }
            throw ClientError.invalidArgument("already in \(room) as \(existing.nick)")
        }
        guard muc.joins[room] == nil else { throw ClientError.invalidArgument("already entering \(room)") }
        muc.rooms[room] = RoomRegistry.Room(jid: room, nick: nick, password: password)
        let joined = try await awaitJoin(room) {
            await self.send(Self.joinPresence(to: occupantJID, password: password, history: history))
        }
        if joined.created, instant {
            try await createInstantRoom(room)
        }
        return joined
    }

    /// Sends the join presence and waits for the room to let us in or refuse.
    func awaitJoin(_ room: JID, send: @escaping @Sendable () async -> Void) async throws -> JoinedRoom {
        let token = UUID()
        return try await withCheckedThrowingContinuation { continuation in
            muc.joins[room] = (token, continuation)
            Task {
                await send()
                try? await Task.sleep(for: Self.roomJoinTimeout)
                await self.finishJoin(room, .failure(ClientError.timeout), token: token)
            }
        }
    }

    /// Ends the join under way (only the one `token` names, for a timeout).
    func finishJoin(_ room: JID, _ result: Result<JoinedRoom, any Error>, token: UUID? = nil) {
        guard let pending = muc.joins[room], token == nil || pending.token == token else { return }
        muc.joins[room] = nil
        let continuation = pending.continuation
        // A rejoin that timed out is tried again after the next reconnect.
        if case .failure = result, muc.rooms[room]?.inRoom != true, muc.rooms[room]?.rejoining != true { muc.rooms[room] = nil }
        continuation.resume(with: result)
    }

    static func joinPresence(to occupant: JID, password: String?, history: RoomHistoryRequest?) -> XMLElement {
        var x = XMLElement("x", namespace: RoomNamespace.muc)
        if let history {
            var element = XMLElement("history", namespace: RoomNamespace.muc)
            if let value = history.maxStanzas { element.setAttribute("maxstanzas", String(value)) }
            if let value = history.maxChars { element.setAttribute("maxchars", String(value)) }
            if let value = history.seconds { element.setAttribute("seconds", String(value)) }
            if let value = history.since { element.setAttribute("since", Self.stamp(value)) }
            x.append(element)
        }
        if let password { x.append(XMLElement("password", namespace: RoomNamespace.muc, text: password)) }
        return XMLElement("presence", namespace: XMLNamespace.client, ["to": occupant.description], [x])
    }

    /// §7.7: the rooms we are in see our availability and status change too (not an
    /// unavailable presence, which would take us out of them).
    func announceStatusToRooms(_ presence: XMLElement) async {
        guard presence.type == nil else { return }
        for state in muc.rooms.values where state.inRoom && !state.leaving {
            guard let occupant = try? Self.occupantJID(state.jid, state.nick) else { continue }
            var copy = presence
            copy.to = occupant.description
            await send(copy)
        }
    }

    /// Leaves `room` (§7.14); `.room(.left)` follows when the room confirms.
    public func leave(_ room: JID, status: String? = nil) async throws {
        let room = room.bare
        guard let state = muc.rooms[room] else { throw ClientError.notInRoom(room) }
        muc.rooms[room]?.leaving = true
        var presence = XMLElement(
            "presence", namespace: XMLNamespace.client, ["to": try Self.occupantJID(room, state.nick).description, "type": "unavailable"])
        if let status { presence.append(XMLElement("status", text: status)) }
        await send(presence)
    }

    /// Changes our nickname in `room` (§7.6); `.room(.nickChanged)` follows, or a
    /// `.stanzaError` with `conflict` when it is taken.
    public func changeNick(in room: JID, to nick: String) async throws {
        let room = room.bare
        guard muc.rooms[room]?.inRoom == true else { throw ClientError.notInRoom(room) }
        await send(XMLElement("presence", namespace: XMLNamespace.client, ["to": try Self.occupantJID(room, nick).description]))
    }

    /// Sends a message to everyone in `room` (queued while disconnected) and returns its id.
    /// The room's echo confirms it (`.sent`); a refusal arrives as `.stanzaError` with this id.
    @discardableResult
    public func sendRoomMessage(to room: JID, body: String) async throws -> String {
        let room = room.bare
        guard let state = muc.rooms[room], state.inRoom else { throw ClientError.notInRoom(room) }
        let id = UUID().uuidString
        // Its echo from the room confirms it; it is not news.
        _ = muc.rooms[room]?.remember(id)
        let record = MessageRecord(peer: room, direction: .outgoing, id: id, originID: id, body: body, timestamp: Date())
        await persist { _ = try await $0.storeRoomMessage(record, nick: state.nick) }
        var message = XMLElement("message", namespace: XMLNamespace.client, ["to": room.description, "type": "groupchat", "id": id])
        message.append(XMLElement("body", text: body))
        message.append(XMLElement("origin-id", namespace: XMLNamespace.stanzaID, ["id": id]))
        await send(message)
        return id
    }

    /// A private message to the occupant `nick` of `room` (§7.5).
    @discardableResult
    public func sendPrivateMessage(to nick: String, in room: JID, body: String) async throws -> String {
        let room = room.bare
        guard let state = muc.rooms[room], state.inRoom else { throw ClientError.notInRoom(room) }
        guard state.occupants[nick] != nil else {
            throw ClientError.invalidArgument("no one in \(room) has the nickname \(nick)")
        }
        let id = UUID().uuidString
        var message = XMLElement(
            "message", namespace: XMLNamespace.client, ["to": try Self.occupantJID(room, nick).description, "type": "chat", "id": id])
        message.append(XMLElement("body", text: body))
        message.append(XMLElement("x", namespace: RoomNamespace.user))
        await send(message)
        return id
    }

    /// Changes the room's subject (§8.1) and returns once the room announced it.
    /// Throws `ClientError.refused` (`forbidden`) when only moderators may change it.
    public func setSubject(of room: JID, to subject: String) async throws {
        let room = room.bare
        guard muc.rooms[room]?.inRoom == true else { throw ClientError.notInRoom(room) }
        let id = UUID().uuidString
        let message = XMLElement(
            "message", namespace: XMLNamespace.client, ["to": room.description, "type": "groupchat", "id": id],
            [XMLElement("subject", text: subject)])
        muc.subjectChanges[room] = (id, subject)
        defer { if muc.subjectChanges[room]?.id == id { muc.subjectChanges[room] = nil } }
        try await awaitEcho(id) { await self.send(message) }
    }

    func awaitEcho(_ id: String, send: @escaping @Sendable () async -> Void) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            muc.echoes[id] = continuation
            Task {
                await send()
                try? await Task.sleep(for: .seconds(30))
                await self.finishEcho(id, .failure(ClientError.timeout))
            }
        }
    }

    func finishEcho(_ id: String, _ result: Result<Void, any Error>) {
        muc.echoes.removeValue(forKey: id)?.resume(with: result)
    }

    /// The rooms we are in, by JID.
    public func joinedRooms() -> [JoinedRoom] {
        muc.rooms.values.filter { $0.inRoom && !$0.leaving }.map(\.summary).sorted { $0.jid < $1.jid }
    }

    /// Our nickname in `room`, while we are in it.
    public func nick(in room: JID) -> String? {
        muc.rooms[room.bare]?.nick
    }

    /// Whether we are in `room` now.
    public func isInRoom(_ room: JID) -> Bool {
        muc.rooms[room.bare].map { $0.inRoom && !$0.leaving } ?? false
    }

    /// The occupants of `room`, with roles, affiliations and (when visible) real JIDs.
    public func occupants(of room: JID) throws -> [RoomOccupant] {
        guard let state = muc.rooms[room.bare], state.inRoom else { throw ClientError.notInRoom(room.bare) }
        return state.occupants.values.sorted { $0.nick < $1.nick }
    }

    static func occupantJID(_ room: JID, _ nick: String) throws -> JID {
        guard room.localpart != nil, room.isBare else { throw ClientError.invalidArgument("a room is named room@service, not \(room)") }
        guard !nick.isEmpty, let jid = try? JID(localpart: room.localpart, domainpart: room.domainpart, resourcepart: nick) else {
            throw ClientError.invalidArgument("'\(nick)' is not a valid nickname")
        }
        return jid
    }

    static func stamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }

    /// An iq to a room or service; its stanza error becomes `ClientError.refused`.
    func roomRequest(_ type: String, to target: JID, _ payload: XMLElement) async throws -> XMLElement {
        do {
            return try await xmpp.request(XMLElement("iq", namespace: XMLNamespace.client, ["type": type, "to": target.description], [payload]))
        } catch let error as StanzaError {
            throw ClientError.refused(error)
        }
    }
}
