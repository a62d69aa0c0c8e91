import Logging
import ParleyCore

/// Every routing rule for stanzas sent by local clients and hosted services, in one place
/// (RFC 6120 §10, RFC 6121 §8). Sessions hand over stanzas with `from` already stamped; the
/// router decides by destination: the accounts' domain (the server answers, or sessions
/// receive them), a hosted service's domain (`+Hosted`), or any other domain (an error).
public final class StanzaRouter: Sendable {
    public let domain: JID
    let sessions: SessionRegistry
    let modules: ModuleRegistry
    let policy: any DeliveryPolicy
    let logger: Logger
    /// Iq requests the server sends to clients, waiting for their answers.
    public let requests: ServerIQRequests
    /// Services with domains of their own (MUC): stanzas to those domains go to them.
    let hosted: HostedServices

    public init(
        domain: JID, sessions: SessionRegistry, modules: ModuleRegistry,
        policy: any DeliveryPolicy = OpenDeliveryPolicy(), logger: Logger, requests: ServerIQRequests? = nil,
        hosted: HostedServices = HostedServices()
    ) {
        self.hosted = hosted
        self.domain = domain
        self.sessions = sessions
        self.modules = modules
        self.policy = policy
        self.logger = logger
        self.requests = requests ?? ServerIQRequests(domain: domain)
    }

    /// Routes one stanza from a bound local session. Returns what is still in flight for it
    /// (presence handling reads and writes storage; messages are stored).
    @discardableResult
    public func route(_ stanza: XMLElement, from sender: SessionHandle) -> RouteResult {
        let to: JID?
        if let address = stanza.to {
            do {
                to = try JID(address)
            } catch {
                bounce(stanza, to: sender, StanzaError(.jidMalformed, text: "The 'to' address is not a valid JID: \(error)."))
                return RouteResult()
            }
        } else {
            to = nil
        }
        return route(stanza, to: to, from: sender)
    }

    /// `to` is the stanza's `to` address, already parsed (nil when it has none).
    public func route(_ stanza: XMLElement, to address: JID?, from sender: SessionHandle) -> RouteResult {
        // RFC 6120 §10.3: no 'to' means the sender's own account (for presence, §4.2 of
        // RFC 6121 makes it a broadcast).
        let to = address ?? sender.jid.bare
        guard to.domainpart == domain.domainpart else {
            // Only stanzas leaving the accounts' domain pay for this look-up.
            if let service = hosted.service(for: to.domainpart) {
                return routeToService(stanza, service, to: to, from: sender)
            }
            bounce(
                stanza, to: sender,
                StanzaError(.remoteServerNotFound, text: "This server does not talk to other servers (\(to.domainpart))."))
            return RouteResult()
        }
        if to.localpart != nil, to.bare != sender.jid.bare {
            switch policy.verdict(from: sender.jid, to: to, stanza: stanza) {
            case .deliver: break
            case .drop: return RouteResult()
            case .reject(let error):
                bounce(stanza, to: sender, error)
                return RouteResult()
            }
        }
        switch stanza.name {
        case "iq":
            routeIQ(stanza, to: to, from: sender)
            return RouteResult()
        case "message":
            return routeMessage(stanza, to: to, from: sender)
        default:
            return RouteResult(pending: routePresence(stanza, to: to, from: sender, hadAddress: address != nil))
        }
    }

    // MARK: iq

    private func routeIQ(_ stanza: XMLElement, to: JID, from sender: SessionHandle) {
        let kind: IQKind
        switch stanza.type {
        case "get": kind = .get
        case "set": kind = .set
        case "result", "error":
            // Replies go to the full JID that asked; replies to the server itself answer a
            // request it made (the session consumed those to its own pings).
            if to.isFull {
                sessions.session(to)?.deliver(stanza)
            } else if to.isDomain {
                _ = requests.receive(stanza, from: sender.jid)
            }
            return
        default:
            return bounce(stanza, to: sender, StanzaError(.badRequest, text: "An iq needs a type of get, set, result or error."))
        }
        guard stanza.id?.isEmpty == false else {
            return bounce(stanza, to: sender, StanzaError(.badRequest, text: "An iq needs an id."))
        }
        let payloads = stanza.elements
        guard payloads.count == 1, let payload = payloads.first else {
            return bounce(stanza, to: sender, StanzaError(.badRequest, text: "An iq get or set carries exactly one child element."))
        }
        if to.isFull {
            guard let target = sessions.session(to) else {
                return bounce(stanza, to: sender, StanzaError(.serviceUnavailable))
            }
            return target.deliver(stanza)
        }
        let target: IQTarget = to.isDomain ? .server : .account
        guard let handler = modules.handler(for: stanza, kind: kind, payload: payload, target: target) else {
            return bounce(stanza, to: sender, StanzaError(.serviceUnavailable))
        }
        let request = IQRequest(stanza: stanza, payload: payload, from: sender.jid, to: to, kind: kind, session: sender)
        let replyTo = sender
        let domain = domain
        handler(request, IQResponder(request: stanza) { reply in
            var reply = reply
            // Answers come from the address asked; a missing 'to' was the account itself.
            if reply.from == nil { reply.from = to == replyTo.jid.bare ? to.description : domain.description }
            replyTo.deliver(reply)
        })
    }

    // MARK: message

    private func routeMessage(_ stanza: XMLElement, to: JID, from sender: SessionHandle) -> RouteResult {
        let type = stanza.type ?? "normal"
        if to.isDomain {
            bounce(stanza, to: sender, StanzaError(.serviceUnavailable))
            return RouteResult()
        }
        // A resend of a message already routed (a client whose resumption failed sends again
        // what was never acknowledged) is handled as done, and goes nowhere a second time.
        if let filter = modules.messageFilter, !filter(stanza, sender, to) { return RouteResult() }
        var routed = RoutedMessage(forRecipient: stanza, forSender: stanza)
        if type != "error", let archiver = modules.messageArchiver {
            routed = archiver(stanza, sender.jid, to)
        }
        if let gate = routed.deliverAfter {
            let deferred = Task { [self, routed] in
                await gate.value
                let (work, delivered) = deliverMessage(routed.forRecipient, to: to, type: type, from: sender)
                modules.messageCopier?(routed, sender, to, delivered)
                await work?.value
            }
            var result = RouteResult(pending: deferred, archived: routed.archived)
            result.holdsStream = true
            return result
        }
        let (work, delivered) = deliverMessage(routed.forRecipient, to: to, type: type, from: sender)
        modules.messageCopier?(routed, sender, to, delivered)
        switch (work, routed.backpressure) {
        case (let work?, let backpressure?):
            return RouteResult(
                pending: Task {
                    await work.value
                    await backpressure.value
                }, archived: routed.archived)
        case (let work, let backpressure):
            return RouteResult(pending: work ?? backpressure, archived: routed.archived)
        }
    }

    private func deliverMessage(
        _ stanza: XMLElement, to: JID, type: String, from sender: SessionHandle
    ) -> (Task<Void, Never>?, [SessionHandle]) {
        if to.isFull, let target = sessions.session(to) {
            return (target.handOver(stanza), [target])
        }
        // RFC 6121 §8.5.3.2.1: a full JID with no such resource stands for the bare JID only
        // for chat; normal and groupchat are refused (its other choice, silence, would lose a
        // message without a word), headline and error are dropped (as Prosody and ejabberd
        // drop headlines: nothing to act on, and no sign of which resources are online).
        if to.isFull {
            switch type {
            case "chat": break
            case "headline", "error": return (nil, [])
            default:
                bounce(stanza, to: sender, StanzaError(.serviceUnavailable))
                return (nil, [])
            }
        }
        return deliverToAccount(stanza, bare: to.bare, type: type, from: sender)
    }

    /// A message a session accepted for its client but could not write before it ended: it
    /// goes to the account's other resources or offline, like a new message to the bare JID.
    /// Returns the work still in flight for it (a write to another node's inbox, or to
    /// offline storage), which whoever held the message waits for before forgetting it.
    @discardableResult
    public func redeliver(_ message: XMLElement, account: JID) -> Task<Void, Never>? {
        let type = message.type ?? "normal"
        guard type == "chat" || type == "normal" else { return nil }
        let targets = highestPriority(sessions.sessions(of: account).filter { $0.isAvailable && $0.priority >= 0 })
        if targets.isEmpty {
            return modules.undeliverableMessageHandler?(message, account, nil)
        }
        return handOver(message, to: targets)
    }

    /// Delivers to every one of `targets`; returns the writes to other nodes' inboxes, if
    /// any (none on a single node, where this allocates nothing).
    func handOver(_ stanza: XMLElement, to targets: [SessionHandle]) -> Task<Void, Never>? {
        var pending: [Task<Void, Never>] = []
        for session in targets {
            if let write = session.handOver(stanza) { pending.append(write) }
        }
        return Self.all(pending)
    }

    /// One task for the writes of a delivery to several sessions; nil when none is pending
    /// (every target local: the usual case costs nothing).
    static func all(_ pending: [Task<Void, Never>]) -> Task<Void, Never>? {
        switch pending.count {
        case 0: return nil
        case 1: return pending[0]
        default: return Task { for task in pending { await task.value } }
        }
    }

    /// RFC 6121 §8.5.2: delivery to a bare JID of a local account.
    private func deliverToAccount(_ stanza: XMLElement, bare: JID, type: String, from sender: SessionHandle) -> (Task<Void, Never>?, [SessionHandle]) {
        let available = sessions.sessions(of: bare).filter { $0.isAvailable && $0.priority >= 0 }
        switch type {
        case "error":
            // §8.5.2.1.1: silently ignored; an error answers a stanza a resource sent, and
            // only a full JID says which.
            return (nil, [])
        case "groupchat":
            bounce(stanza, to: sender, StanzaError(.serviceUnavailable))
            return (nil, [])
        case "headline":
            return (handOver(stanza, to: available), available)
        default:
            let targets = highestPriority(available)
            if !targets.isEmpty {
                return (handOver(stanza, to: targets), targets)
            }
        }
        // Nobody available: offline storage decides (it knows whether the account exists);
        // without it the error is the same whether or not the account exists (§8.5.2.2.1).
        if let offline = modules.undeliverableMessageHandler {
            return (offline(stanza, bare, sender), [])
        }
        bounce(stanza, to: sender, StanzaError(.serviceUnavailable))
        return (nil, [])
    }

    func highestPriority(_ sessions: [SessionHandle]) -> [SessionHandle] {
        guard let top = sessions.map(\.priority).max() else { return [] }
        return sessions.filter { $0.priority == top }
    }

    // MARK: presence

    private func routePresence(_ stanza: XMLElement, to: JID, from sender: SessionHandle, hadAddress: Bool) -> Task<Void, Never>? {
        if let presence = modules.presenceHandler {
            return presence(stanza, sender)
        }
        if !hadAddress {
            // Broadcast presence: the sender's own available resources see it (RFC 6121
            // §4.2.2); contacts' subscriptions are the presence module's concern.
            for session in sessions.sessions(of: sender.jid.bare) where session.isAvailable || session == sender {
                session.deliver(stanza)
            }
            return nil
        }
        if to.isDomain { return nil }
        if to.isFull {
            sessions.session(to)?.deliver(stanza)
            return nil
        }
        for session in sessions.sessions(of: to) where session.isAvailable {
            session.deliver(stanza)
        }
        return nil
    }

    // MARK: errors

    /// Returns an error to the sender, unless the stanza is itself an error (never answered).
    public func bounce(_ stanza: XMLElement, to sender: SessionHandle, _ error: StanzaError) {
        guard var reply = stanza.errorReply(error) else { return }
        if stanza.to == nil { reply.from = sender.jid.bare.description }
        // An iq always carries an id (RFC 6120 §8.1.3); answering one that had none, there is
        // nothing to echo, so the reply's is empty.
        if reply.name == "iq", reply.id == nil { reply.id = "" }
        sender.deliver(reply)
    }
}
