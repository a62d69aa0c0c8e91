import Foundation
import ParleyCore

/// A room's archive (XEP-0313 on the room JID, XEP-0059 paging) and the service's room
/// list (XEP-0045 §6.1–6.3 through disco).
extension ChatClient {
    /// Where a page of a room's archive lies.
    public enum RoomArchivePosition: Sendable, Equatable {
        /// The newest messages.
        case latest
        /// The page before the result with this id (a page's `first`).
        case before(String)
        /// The page after the result with this id (a page's `last`).
        case after(String)
        /// The oldest messages.
        case oldest
    }

    /// One page of `room`'s archive, oldest first. Throws `ClientError.refused` when the
    /// room keeps no archive (`service-unavailable`, `feature-not-implemented`) or does not
    /// let us read it (`forbidden`, `registration-required`).
    public func roomArchive(_ room: JID, _ position: RoomArchivePosition = .latest, max: Int = 50) async throws -> RoomArchivePage {
        guard (1...1000).contains(max) else { throw ClientError.invalidArgument("a page holds 1 to 1000 messages, not \(max)") }
        let room = room.bare
        let queryID = UUID().uuidString
        var set = XMLElement("set", namespace: XMLNamespace.resultSetManagement)
        set.append(XMLElement("max", namespace: XMLNamespace.resultSetManagement, text: String(max)))
        switch position {
        case .latest: set.append(XMLElement("before", namespace: XMLNamespace.resultSetManagement))
        case .before(let id): set.append(XMLElement("before", namespace: XMLNamespace.resultSetManagement, text: id))
        case .after(let id): set.append(XMLElement("after", namespace: XMLNamespace.resultSetManagement, text: id))
        case .oldest: break
        }
        var query = XMLElement("query", namespace: XMLNamespace.archive, ["queryid": queryID])
        query.append(set)
        muc.archivePages[queryID] = []
        defer { muc.archivePages[queryID] = nil }
        let answer = try await roomRequest("set", to: room, query)
        // The results came before the answer; wait until the inbox has collected them.
        await drainInbox()
        let fin = answer.firstChild("fin", namespace: XMLNamespace.archive)
        let resultSet = fin?.firstChild("set", namespace: XMLNamespace.resultSetManagement)
        let complete = fin?[attribute: "complete"] == "true" || fin?[attribute: "complete"] == "1"
        return RoomArchivePage(
            messages: muc.archivePages[queryID] ?? [], first: resultSet?.firstChild("first", namespace: XMLNamespace.resultSetManagement)?.text,
            last: resultSet?.firstChild("last", namespace: XMLNamespace.resultSetManagement)?.text, complete: complete)
    }

    /// A `<result/>` of one of our room archive queries, from that room: kept for its page.
    /// Returns false for anything else.
    func collectRoomArchiveResult(_ stanza: XMLElement) -> Bool {
        guard let result = stanza.firstChild("result", namespace: XMLNamespace.archive), let queryID = result[attribute: "queryid"],
            muc.archivePages[queryID] != nil, let from = stanza.from.flatMap({ try? JID($0) }), from.isBare, from.localpart != nil
        else { return false }
        guard let id = result[attribute: "id"], let forwarded = result.firstChild("forwarded", namespace: XMLNamespace.forward),
            let message = forwarded.firstChild("message", namespace: XMLNamespace.client),
            let sender = message.from.flatMap({ try? JID($0) }), sender.bare == from, let body = message.firstChild("body")?.text
        else { return true }
        let stamp = forwarded.firstChild("delay", namespace: XMLNamespace.delay)?[attribute: "stamp"].flatMap(IncomingMessage.parseStamp)
        let ownNick = muc.rooms[from]?.nick
        let nick = sender.resourcepart
        muc.archivePages[queryID]?.append(
            RoomMessage(
                room: from, nick: nick, body: body, id: message.id, stanzaID: id,
                occupantID: message.firstChild("occupant-id", namespace: RoomNamespace.occupantID)?[attribute: "id"],
                delayedUntil: stamp ?? Date(), isOwn: nick != nil && nick == ownNick,
                mentionsMe: ownNick.map { nick != $0 && Self.mentions(body, $0) } ?? false, media: MediaAttachment(message: message)))
        return true
    }

    /// The rooms `service` lists (§6.3); with no service, the first conference service our
    /// server lists (§6.1).
    public func publicRooms(service: JID? = nil) async throws -> [PublicRoom] {
        var found = service
        if found == nil { found = try await roomService() }
        guard let service = found else {
            throw ClientError.refused(StanzaError(.itemNotFound, text: "The server lists no multi-user chat service."))
        }
        let answer = try await roomRequest("get", to: service, XMLElement("query", namespace: XMLNamespace.discoItems))
        return answer.firstChild("query", namespace: XMLNamespace.discoItems)?.children("item", namespace: XMLNamespace.discoItems)
            .compactMap { item in item[attribute: "jid"].flatMap { try? JID($0) }.map { PublicRoom(jid: $0, name: item[attribute: "name"]) } }
            ?? []
    }

    /// Our server's multi-user chat service: the first item of its disco#items whose
    /// disco#info has a `conference`/`text` identity.
    public func roomService() async throws -> JID? {
        let domain = try JID(ownBareJID.domainpart)
        let items = try await roomRequest("get", to: domain, XMLElement("query", namespace: XMLNamespace.discoItems))
        let candidates = items.firstChild("query", namespace: XMLNamespace.discoItems)?.children("item", namespace: XMLNamespace.discoItems)
            .compactMap { $0[attribute: "jid"].flatMap { try? JID($0) } } ?? []
        for candidate in candidates where candidate.localpart == nil {
            guard let info = try? await roomRequest("get", to: candidate, XMLElement("query", namespace: XMLNamespace.discoInfo)) else { continue }
            let identities = info.firstChild("query", namespace: XMLNamespace.discoInfo)?.children("identity", namespace: XMLNamespace.discoInfo) ?? []
            if identities.contains(where: { $0[attribute: "category"] == "conference" }) { return candidate }
        }
        return nil
    }
}
