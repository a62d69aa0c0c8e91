import ParleyCore

/// The routing rules between local sessions and hosted services. Both directions meet the
/// same blocking policy as stanzas between accounts; messages a service sends to an account
/// with no available resource go to offline storage like any other.
extension StanzaRouter {
    /// A local session's stanza for a hosted service's domain or a JID at it.
    func routeToService(_ stanza: XMLElement, _ service: any HostedService, to: JID, from sender: SessionHandle) -> RouteResult {
        switch policy.verdict(from: sender.jid, to: to, stanza: stanza) {
        case .deliver: break
        case .drop: return RouteResult()
        case .reject(let error):
            bounce(stanza, to: sender, error)
            return RouteResult()
        }
        if stanza.name == "iq", stanza.type == "get" || stanza.type == "set", stanza.id?.isEmpty != false {
            bounce(stanza, to: sender, StanzaError(.badRequest, text: "An iq needs an id."))
            return RouteResult()
        }
        // Directed presence belongs to the presence module: it remembers where it went, so
        // the service gets unavailable presence when the user goes offline or the session
        // ends (RFC 6121 §4.6.3), in order with the user's other presence.
        if stanza.name == "presence", let presence = modules.presenceHandler {
            return RouteResult(pending: presence(stanza, sender))
        }
        let archived = recordOutgoingPrivateMessage(stanza, to: to, from: sender, service: service)
        let pending = service.receiveDurably(stanza, from: sender.jid)
        return RouteResult(pending: pending, archived: archived)
    }

    /// A stanza a hosted service sends, with its `from` at `serviceDomain`.
    func route(_ stanza: XMLElement, fromService serviceDomain: String) {
        guard let from = stanza.from.flatMap({ try? JID($0) }), from.domainpart == serviceDomain,
            let to = stanza.to.flatMap({ try? JID($0) })
        else {
            logger.error(
                "a hosted service sent a stanza without a valid 'from' at its domain or 'to'",
                metadata: ["service": "\(serviceDomain)", "stanza": "\(stanza.name)"])
            return
        }
        guard to.domainpart == domain.domainpart else {
            if let other = hosted.service(for: to.domainpart) { return other.receive(stanza, from: from) }
            return bounce(
                stanza, toService: serviceDomain,
                StanzaError(.remoteServerNotFound, text: "This server does not talk to other servers (\(to.domainpart))."))
        }
        if to.localpart != nil {
            switch policy.verdict(from: from, to: to, stanza: stanza) {
            case .deliver: break
            case .drop: return
            case .reject(let error):
                // A room's traffic from an occupant the user blocked just does not arrive: an
                // error would read to the room as the user's client having gone.
                if stanza.type == "groupchat" { return }
                return bounce(stanza, toService: serviceDomain, error)
            }
        }
        switch stanza.name {
        case "message": deliverServiceMessage(stanza, to: to, serviceDomain: serviceDomain)
        case "presence": deliverServicePresence(stanza, to: to)
        default: deliverServiceIQ(stanza, to: to, serviceDomain: serviceDomain)
        }
    }

    /// RFC 6121 §8.5 for a message from a service, as for one from an account: a full JID
    /// that is gone makes a groupchat or normal message an error (how a room learns an
    /// occupant left without a word), drops a headline or an error, and only a chat message
    /// falls back to the bare JID; to the bare JID, chat and normal go to the top resources
    /// or, with none available, to offline storage, and an error is dropped.
    private func deliverServiceMessage(_ stanza: XMLElement, to: JID, serviceDomain: String) {
        let type = stanza.type ?? "normal"
        guard !to.isDomain else { return bounce(stanza, toService: serviceDomain, StanzaError(.serviceUnavailable)) }
        if to.isFull {
            if let target = sessions.session(to) { return target.deliver(stanza) }
            switch type {
            case "chat": break
            case "headline", "error": return
            default: return bounce(stanza, toService: serviceDomain, StanzaError(.serviceUnavailable))
            }
        }
        let available = sessions.sessions(of: to.bare).filter { $0.isAvailable && $0.priority >= 0 }
        switch type {
        case "error":
            return
        case "groupchat":
            bounce(stanza, toService: serviceDomain, StanzaError(.serviceUnavailable))
        case "headline":
            for session in available { session.deliver(stanza) }
        default:
            let targets = highestPriority(available)
            if !targets.isEmpty {
                for session in targets { session.deliver(stanza) }
            } else if let offline = modules.undeliverableMessageHandler {
                // Without a sender session there is nothing to hold; the offline writer keeps
                // the routing order all the same.
                _ = offline(stanza, to.bare, nil)
            } else {
                bounce(stanza, toService: serviceDomain, StanzaError(.serviceUnavailable))
            }
        }
    }

    /// Presence from a service is directed presence: to the resource named, or to every
    /// available resource of the account.
    private func deliverServicePresence(_ stanza: XMLElement, to: JID) {
        if to.isFull {
            sessions.session(to)?.deliver(stanza)
        } else if !to.isDomain {
            for session in sessions.sessions(of: to) where session.isAvailable { session.deliver(stanza) }
        }
    }

    private func deliverServiceIQ(_ stanza: XMLElement, to: JID, serviceDomain: String) {
        switch stanza.type {
        case "get", "set":
            guard to.isFull, let target = sessions.session(to) else {
                return bounce(stanza, toService: serviceDomain, StanzaError(.serviceUnavailable))
            }
            target.deliver(stanza)
        case "result", "error":
            if to.isFull { sessions.session(to)?.deliver(stanza) }
        default:
            logger.error("a hosted service sent an iq without a valid type", metadata: ["service": "\(serviceDomain)"])
        }
    }

    /// Returns an error to the service, from the address that could not be reached.
    private func bounce(_ stanza: XMLElement, toService serviceDomain: String, _ error: StanzaError) {
        guard let reply = stanza.errorReply(error), let from = reply.from.flatMap({ try? JID($0) }) else { return }
        hosted.service(for: serviceDomain)?.receive(reply, from: from)
    }
}
