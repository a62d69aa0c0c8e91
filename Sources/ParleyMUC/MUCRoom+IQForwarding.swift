import ParleyCore

/// Iqs between occupants (vCards, versions, XEP-0410 pings of others, as Prosody does):
/// the room passes a request to one session of the addressed occupant under its own id,
/// from the asker's occupant JID, and the answer back, so neither learns the other's real
/// JID in a semi-anonymous room.
struct MUCPendingIQs: Sendable {
    struct Request: Sendable {
        var asker: JID
        var id: String
        var target: JID
    }

    static let limit = 256
    private var requests: [String: Request] = [:]
    private var order: [String] = []
    private var counter: UInt64 = 0

    /// Remembers a request; returns the id it goes out under. The oldest is forgotten past
    /// the limit (its answer then goes nowhere).
    mutating func add(_ request: Request) -> String {
        counter += 1
        let id = "muc-\(counter)"
        requests[id] = request
        order.append(id)
        if order.count > Self.limit { requests[order.removeFirst()] = nil }
        return id
    }

    mutating func take(_ id: String, answeredBy session: JID) -> Request? {
        guard let request = requests[id], request.target == session else { return nil }
        requests[id] = nil
        order.removeAll { $0 == id }
        return request
    }
}

extension MUCRoom {
    /// A get or set from `session` to `room/nick`.
    mutating func forwardRequest(_ stanza: XMLElement, from session: JID, to nick: String, out: inout [XMLElement]) throws(StanzaError) {
        guard let senderNick = self.nick(of: session) else {
            throw StanzaError(.notAcceptable, text: "You are not in this room.")
        }
        guard let target = occupant(nick), let targetSession = target.sessions.first else {
            throw StanzaError(.itemNotFound, text: "No one in this room has the nickname '\(nick)'.")
        }
        let id = pendingIQs.add(.init(asker: session, id: stanza.id ?? "", target: targetSession))
        var forwarded = stanza
        forwarded.from = occupantJID(senderNick).description
        forwarded.to = targetSession.description
        forwarded.id = id
        out.append(forwarded)
    }

    /// A result or error from an occupant's session to `room/nick`: the answer to a request
    /// the room passed on, back to whoever asked.
    mutating func forwardAnswer(_ stanza: XMLElement, from session: JID, out: inout [XMLElement]) {
        guard let id = stanza.id, let request = pendingIQs.take(id, answeredBy: session), let nick = nick(of: session) else { return }
        var answer = stanza
        answer.from = occupantJID(nick).description
        answer.to = request.asker.description
        answer.id = request.id
        out.append(answer)
    }
}
