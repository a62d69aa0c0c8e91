import Logging
import NIOConcurrencyHelpers
import ParleyCore
import ParleyStorage

/// RFC 6121 presence: broadcasts to subscribers, probes answered from the contacts' live
/// sessions when a resource becomes available, directed presence, unavailable presence
/// however a session ends, and (in `+Subscriptions`) the subscription state machine.
/// Presence never reaches anyone without a `from` subscription, except by directed presence
/// the user chose to send.
public final class PresenceModule: ServerModule {
    let domain: JID
    let sessions: SessionRegistry
    let rosters: any RosterStore
    let accounts: any AccountStore
    let policy: any DeliveryPolicy
    let pusher: RosterPusher
    let queue = UserQueue()
    let logger: Logger
    let events: ServerEventBus
    /// Directed presence to a hosted service's JID (joining a room) goes to the service.
    let hosted: HostedServices
    /// Run after a session's first available presence (offline message delivery).
    let afterInitialPresence: @Sendable (SessionHandle) async -> Void
    /// What other modules add to a user's available presence before it is kept and sent.
    let availablePresenceStamps = NIOLockedValueBox([AvailablePresenceStamp]())

    public init(
        domain: JID, sessions: SessionRegistry, rosters: any RosterStore, accounts: any AccountStore,
        policy: any DeliveryPolicy, events: ServerEventBus, logger: Logger,
        hosted: HostedServices = HostedServices(),
        afterInitialPresence: @escaping @Sendable (SessionHandle) async -> Void
    ) {
        self.hosted = hosted
        self.domain = domain
        self.sessions = sessions
        self.rosters = rosters
        self.accounts = accounts
        self.policy = policy
        self.pusher = RosterPusher(sessions: sessions)
        self.logger = logger
        self.events = events
        self.afterInitialPresence = afterInitialPresence
        events.subscribe { [weak self] event in
            guard let self, case .sessionEnded(let session) = event else { return }
            self.enqueue(for: session.jid) { await self.sessionEnded(session) }
        }
    }

    /// RFC 6121 §3.4.1: a server that honours pre-approvals says so as a stream feature.
    static let preApprovalFeature = "urn:xmpp:features:pre-approval"

    public func register(in registry: inout ModuleRegistry) throws(ModuleRegistry.Error) {
        registry.advertiseStreamFeature(XMLElement("sub", namespace: Self.preApprovalFeature))
        try registry.handlePresence { [self] stanza, sender in
            // Kept before any queued work: the session may end right behind this stanza.
            if stanza.to == nil, stanza.type == nil || stanza.type == "unavailable" {
                sender.withPresence { $0.unavailableStatus = stanza.type == nil ? nil : stanza.firstChild("status")?.text }
            }
            return enqueue(for: sender.jid) { await self.handle(stanza, from: sender) }
        }
    }

    /// Work on one user's presence and roster runs in arrival order.
    @discardableResult
    func enqueue(for jid: JID, _ work: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
        queue.enqueue(jid.bare.description, work)
    }

    private func handle(_ stanza: XMLElement, from sender: SessionHandle) async {
        let to = stanza.to.flatMap { try? JID($0) }
        switch stanza.type {
        case nil, "unavailable":
            var stanza = stanza
            if stanza.type == nil { await stampAvailablePresence(&stanza, from: sender) }
            if let to {
                directed(stanza, from: sender, to: to)
            } else {
                await broadcast(stanza, from: sender)
            }
        case "subscribe", "subscribed", "unsubscribe", "unsubscribed":
            guard let to, to.localpart != nil, let request = SubscriptionRequest(rawValue: stanza.type ?? "") else { return }
            do {
                try await subscription(request, stanza, from: sender, to: to.bare)
            } catch {
                logger.error("subscription handling failed", metadata: ["error": "\(error)"])
            }
        case "probe":
            // The server probes on the user's behalf (§4.3); a client's own probe is ignored.
            return
        case "error":
            if let to, to.isFull {
                if let service = hostedService(of: to) { return service.receive(stanza, from: sender.jid) }
                sessions.session(to)?.deliver(stanza)
            }
        default:
            if var reply = stanza.errorReply(StanzaError(.badRequest, text: "Unknown presence type '\(stanza.type ?? "")'.")) {
                reply.to = sender.jid.description
                sender.deliver(reply)
            }
        }
    }

    // MARK: Broadcast (RFC 6121 §4.2, §4.4, §4.5)

    private func broadcast(_ presence: XMLElement, from sender: SessionHandle) async {
        let available = presence.type == nil
        let priority = presence.firstChild("priority").flatMap { Int8($0.text.trimmingCharacters(in: .whitespaces)) } ?? 0
        let (wasAvailable, previousPriority, directed) = sender.withPresence { state -> (Bool, Int8, DirectedPresenceRecipients) in
            let was = state.isAvailable
            let previous = state.priority
            state.isAvailable = available
            state.priority = available ? priority : 0
            state.lastPresence = available ? presence : nil
            let directed = state.directedPresence
            if !available { state.directedPresence = [] }
            return (was, previous, directed)
        }
        if available { events.publish(.availablePresence(sender, presence: presence, initial: !wasAvailable)) }
        let user = sender.jid.bare
        // Initial presence also re-delivers unanswered requests: both read in one go.
        let items: [RosterItem]
        let pending: [PendingSubscription]
        if available && !wasAvailable {
            (items, pending) = await rosterAndPending(of: user)
        } else {
            (items, pending) = (await rosterItems(of: user), [])
        }
        for item in items where item.subscription == .from || item.subscription == .both {
            guard let contact = try? JID(item.contact) else { continue }
            send(presence, from: sender.jid, toAccount: contact)
        }
        // The user's own available resources, the sender included (§4.2.2, §4.4.2).
        for session in sessions.sessions(of: user) where session.isAvailable || session == sender {
            var copy = presence
            copy.to = session.jid.description
            session.deliver(copy)
        }
        if !available {
            for recipient in directed { send(presence, from: sender.jid, toAccount: recipient) }
            return
        }
        guard !wasAvailable else {
            // XEP-0160 §3: stored messages go to the resource that next sends available
            // presence with a non-negative priority; one raising its priority from negative
            // is that resource (until then they wait, §8.5.2.1.1 of RFC 6121).
            if priority >= 0, previousPriority < 0 { await afterInitialPresence(sender) }
            return
        }
        // Initial presence: the current presence of everyone the user is subscribed to
        // (answering the probes of §4.3 from live sessions), of the user's other resources,
        // and every friend request still waiting for an answer (§3.1.3).
        for item in items where item.subscription == .to || item.subscription == .both {
            guard let contact = try? JID(item.contact) else { continue }
            forwardCurrentPresence(of: contact, to: sender)
        }
        for session in sessions.sessions(of: user) where session != sender {
            if var last = session.withPresence({ $0.lastPresence }) {
                last.to = sender.jid.description
                sender.deliver(last)
            }
        }
        for request in pending {
            guard let stored = StoredStanza.parse(request.stanza) else { continue }
            sender.deliver(stored)
        }
        if priority >= 0 { await afterInitialPresence(sender) }
    }

    // MARK: Directed presence (§4.6)

    private func directed(_ presence: XMLElement, from sender: SessionHandle, to recipient: JID) {
        let available = presence.type == nil
        if recipient.bare != sender.jid.bare {
            sender.withPresence { state in
                if available { state.directedPresence.insert(recipient) } else { state.directedPresence.remove(recipient) }
            }
        }
        if let service = hostedService(of: recipient) {
            service.receive(presence, from: sender.jid)
        } else if recipient.isFull {
            sessions.session(recipient)?.deliver(presence)
        } else {
            for session in sessions.sessions(of: recipient) where session.isAvailable { session.deliver(presence) }
        }
    }

    // MARK: Session end (§4.5.2: unavailable however the session ended)

    /// Sessions of a cluster node that died, as this node last knew them: their contacts,
    /// other resources and directed-presence recipients get the unavailable presence the
    /// dead node can no longer send (§4.5.2, §4.6.3). Only the node that took the dead one
    /// over calls this, so each recipient hears it once. Not the hosted services (rooms): every
    /// node's directory tells them of the loss itself, so a room says why its occupant went
    /// (333); an unavailable presence from here as well would race it as a plain exit.
    public func remoteSessionsLost(_ lost: [SessionHandle]) {
        for session in lost { _ = enqueue(for: session.jid) { await self.sessionEnded(session, lost: true) } }
    }

    private func sessionEnded(_ session: SessionHandle, lost: Bool = false) async {
        let (wasAvailable, directed) = session.withPresence { state -> (Bool, DirectedPresenceRecipients) in
            let result = (state.isAvailable, state.directedPresence)
            state.isAvailable = false
            state.directedPresence = []
            return result
        }
        guard wasAvailable || !directed.isEmpty else { return }
        let unavailable = XMLElement(
            "presence", namespace: XMLNamespace.client, ["from": session.jid.description, "type": "unavailable"])
        if wasAvailable {
            let user = session.jid.bare
            for item in await rosterItems(of: user) where item.subscription == .from || item.subscription == .both {
                guard let contact = try? JID(item.contact) else { continue }
                send(unavailable, from: session.jid, toAccount: contact)
            }
            // Not to the rest of a dead node's sessions: they are gone with it.
            for other in sessions.sessions(of: user) where other.isAvailable && (other.node == nil || other.node != session.node) {
                var copy = unavailable
                copy.to = other.jid.description
                other.deliver(copy)
            }
        }
        for recipient in directed where !recipient.isFull || sessions.session(recipient) != nil || hostedService(of: recipient) != nil {
            if lost, hostedService(of: recipient) != nil { continue }
            send(unavailable, from: session.jid, toAccount: recipient)
        }
    }

    // MARK: Delivery helpers

    /// Presence from one of the user's resources to all available resources of an account
    /// (or to one resource, for a full JID), if blocking allows it.
    func send(_ presence: XMLElement, from sender: JID, toAccount recipient: JID) {
        guard policy.verdict(from: sender, to: recipient, stanza: presence) == .deliver else { return }
        var copy = presence
        copy.from = sender.description
        copy.to = recipient.description
        if let service = hostedService(of: recipient) {
            service.receive(copy, from: sender)
            return
        }
        if recipient.isFull {
            sessions.session(recipient)?.deliver(copy)
            return
        }
        for session in sessions.sessions(of: recipient) where session.isAvailable { session.deliver(copy) }
    }

    /// The hosted service `jid` is at, if it is not a local account's.
    func hostedService(of jid: JID) -> (any HostedService)? {
        jid.domainpart == domain.domainpart ? nil : hosted.service(for: jid.domainpart)
    }

    /// The presence of each available resource of `owner`, to one session.
    func forwardCurrentPresence(of owner: JID, to recipient: SessionHandle) {
        for session in sessions.sessions(of: owner) where session.isAvailable {
            guard var last = session.withPresence({ $0.lastPresence }),
                policy.verdict(from: session.jid, to: recipient.jid, stanza: last) == .deliver
            else { continue }
            last.to = recipient.jid.description
            recipient.deliver(last)
        }
    }

    private func rosterAndPending(of user: JID) async -> ([RosterItem], [PendingSubscription]) {
        guard let username = user.localpart else { return ([], []) }
        do {
            return try await rosters.rosterAndPendingSubscriptions(of: username)
        } catch {
            logger.error("cannot read roster", metadata: ["user": "\(username)", "error": "\(error)"])
            return ([], [])
        }
    }

    func rosterItems(of user: JID) async -> [RosterItem] {
        guard let username = user.localpart else { return [] }
        do {
            return try await rosters.roster(of: username).items
        } catch {
            logger.error("cannot read roster", metadata: ["user": "\(username)", "error": "\(error)"])
            return []
        }
    }
}
