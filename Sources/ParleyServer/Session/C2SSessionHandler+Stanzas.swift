import NIOCore
import ParleyCore

/// What a bound session does with each stanza its client sends: check it is a stanza,
/// shape the rate, stamp `from`, and hand it to the router.
extension C2SSessionHandler {
    func receivedStanza(_ element: XMLElement, from handle: SessionHandle) {
        guard element.isStanza, element.namespace == XMLNamespace.client else {
            return fail(StreamError(.unsupportedStanzaType, text: "<\(element.name)/> in '\(element.namespace ?? "")' is not a stanza."))
        }
        // XEP-0198 counts it; a connection whose session was resumed elsewhere is ignored.
        if let session = boundSession, !session.countInbound(by: ObjectIdentifier(self)) { return }
        clientIsAwake()
        server.metrics.stanzaIn(element.name)
        shapeRate()
        var stanza = element
        // RFC 6120 §8.1.2.1: the server stamps the full JID of the session, whatever the
        // client wrote (or left out).
        stanza.from = handle.jidString
        if consumedBySession(stanza, handle: handle) { return }
        let routed: RouteResult
        if let address = stanza.to {
            if let last = lastAddress, last.text == address {
                routed = server.router.route(stanza, to: last.jid, from: handle)
            } else if let jid = try? JID(address) {
                // A client mostly writes to the one it wrote to last: parsing and preparing
                // the same address for every message was 3 % of a message's CPU.
                lastAddress = (address, jid)
                routed = server.router.route(stanza, to: jid, from: handle)
            } else {
                routed = server.router.route(stanza, from: handle)  // refused there, with the reason
            }
        } else {
            routed = server.router.route(stanza, to: nil, from: handle)
        }
        if let archived = routed.archived {
            boundSession?.archived(archived)
            archiveUnconfirmed.append(archived.upperBound)
        }
        if let pending = routed.pending {
            pendingDurability.append(pending)
            // Presence takes effect before anything after it; a run of messages to storage
            // is bounded so the queue of unconfirmed writes cannot grow without limit.
            if stanza.name != "message" || routed.holdsStream || pendingDurability.count >= 256 { waitForDurability() }
        }
        // One wait at a time: a session already waiting for storage reads nothing meanwhile.
        if routed.archived != nil, !isSuspended { holdIfArchiveBehind() }
    }

    /// Stanzas the session answers itself: the legacy session iq and replies to the server's
    /// own pings.
    private func consumedBySession(_ stanza: XMLElement, handle: SessionHandle) -> Bool {
        switch stanza.name {
        case "iq":
            let toServer = stanza.to == nil || stanza.to == server.policy.domain.description
            if stanza.type == "set", toServer, stanza.elements.count == 1,
                stanza.firstChild("session", namespace: XMLNamespace.session) != nil
            {
                var reply = stanza.iqResult()
                reply.to = nil
                if stanza.to == nil { reply.from = nil }
                send(reply)
                return true
            }
            if stanza.type == "result" || stanza.type == "error", toServer || stanza.to == handle.jid.bare.description,
                let id = stanza.id, pendingServerPings.remove(id) != nil
            {
                releaseOccasionalIfIdle()
                return true
            }
            return false
        default:
            return false
        }
    }

    /// Stops reading from the socket while the client is over its stanza rate, and holds
    /// the stanzas already read until the pause is over; TCP then slows the client down and
    /// nothing it sent is dropped.
    private func shapeRate() {
        guard let pause = stanzaBucket.take(), let context else { return }
        readPaused = true
        let channel = context.channel
        _ = channel.setOption(ChannelOptions.autoRead, value: false)
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(in: pause) {
            let handler = loopBound.value
            handler.readPaused = false
            if !handler.readingHeldForWork { _ = channel.setOption(ChannelOptions.autoRead, value: true) }
            handler.drainSuspendedEvents()
        }
    }

    /// XEP-0199 from the server: a bound client that has been silent gets a ping; the idle
    /// timeout closes the stream if even that goes unanswered.
    func pingIdlePeer() {
        guard case .bound(let handle) = phase else { return }
        let id = "ping-" + makeStreamID().prefix(8)
        pendingServerPings.insert(id)
        var ping = XMLElement(
            "iq", namespace: XMLNamespace.client,
            ["from": server.policy.domain.description, "to": handle.jid.description, "type": "get", "id": id])
        ping.append(XMLElement("ping", namespace: PingModule.namespace))
        sendSoon(ping)
    }
}
