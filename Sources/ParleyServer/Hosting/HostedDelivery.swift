import ParleyCore

/// A stanza a hosted service sends, with its `from` and `to` already parsed. A room fans one
/// message out to every occupant's session and sends a newcomer every occupant's presence:
/// parsing both addresses of each copy again, and hopping to the recipient's event loop once
/// per copy, were most of the router's share of the cost.
public struct HostedDelivery: Sendable {
    /// Its `from` and `to` attributes say `from` and `to`.
    public var stanza: XMLElement
    public let from: JID
    public let to: JID

    public init(_ stanza: XMLElement, from: JID, to: JID) {
        self.stanza = stanza
        self.from = from
        self.to = to
    }
}

extension HostedServiceOutlet {
    /// Sends each in order, as `send(_:)` would; the hops to the recipients' event loops are
    /// made once per loop, after the last.
    public func send(_ deliveries: [HostedDelivery]) {
        router.route(deliveries, fromService: domain)
    }
}

extension StanzaRouter {
    /// Presence and groupchat messages to a local full JID take the short way (the rules of
    /// `route(_:fromService:)` for those cases: the blocking policy, then the session or, for a
    /// message, an error back to the service); anything else takes the usual one, after what
    /// was batched before it.
    ///
    /// The deliveries are read where they lie: copying each one (its stanza and two JIDs
    /// retained and released) three times was the largest share of a room's reference
    /// counting (bench/README.md, MUC, fourteenth round).
    func route(_ deliveries: [HostedDelivery], fromService serviceDomain: String) {
        let batch = DeliveryBatch()
        let localDomain = domain.domainpart
        deliveries.withUnsafeBufferPointer { deliveries in
            let shortWay = deliveries.indices.map { index -> Bool in
                let name = deliveries[index].stanza.name
                return (name == "presence" || (name == "message" && deliveries[index].stanza.type == "groupchat"))
                    && deliveries[index].from.domainpart == serviceDomain && deliveries[index].to.isFull
                    && deliveries[index].to.localpart != nil && deliveries[index].to.domainpart == localDomain
            }
            // Every session looked up at once (a newcomer's run of presences to one session
            // once), before anything is delivered.
            let handles = sessions.sessions(at: deliveries, where: shortWay)
            for index in deliveries.indices {
                guard shortWay[index] else {
                    batch.submit()
                    route(deliveries[index].stanza, fromService: serviceDomain)
                    continue
                }
                // A room's traffic from an occupant the user blocked just does not arrive (presence
                // is dropped by the policy itself, a groupchat message would be refused).
                guard policy.verdict(from: deliveries[index].from, to: deliveries[index].to, stanza: deliveries[index].stanza) == .deliver
                else { continue }
                if let session = handles[index] {
                    session.deliver(deliveries[index].stanza, in: batch)
                } else if deliveries[index].stanza.name == "message",
                    let reply = deliveries[index].stanza.errorReply(StanzaError(.serviceUnavailable)),
                    let from = reply.from.flatMap({ try? JID($0) })
                {
                    // How a room learns that an occupant's session is gone without a word.
                    hosted.service(for: serviceDomain)?.receive(reply, from: from)
                }
            }
        }
        batch.submit()
    }
}
