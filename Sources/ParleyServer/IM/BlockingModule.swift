import Logging
import NIOConcurrencyHelpers
import ParleyCore
import ParleyStorage
import Synchronization

/// XEP-0191 blocking. The block lists of all accounts are kept in memory (loaded at start,
/// updated on every change) because the router asks on every stanza, synchronously.
public final class BlockingModule: ServerModule, DeliveryPolicy {
    public static let namespace = XMLNamespace.blocking
    static let errorsNamespace = XMLNamespace.blockingErrors

    let store: any BlockListStore
    let rosters: any RosterStore
    let sessions: SessionRegistry
    let logger: Logger
    private let lists = NIOLockedValueBox(Lists())
    /// Whether any account blocks anyone (`lists.blocked` is not empty), kept with every
    /// change of the lists: while no one does, the router's question for each stanza (for
    /// each copy of a room's message, from every event loop at once) takes no lock.
    private let anyBlocks = Atomic<Bool>(false)
    /// Told the username whose list changed, once the change is stored (a cluster tells
    /// its other nodes, which keep lists of their own).
    private let listObservers = NIOLockedValueBox([@Sendable (String) -> Void]())

    private struct Lists {
        var blocked: [JID: Set<JID>] = [:]
        /// Changes made to each owner's list, so a reload can tell that what it read from
        /// storage may already be out of date.
        var changes: [JID: UInt64] = [:]
    }

    /// With `events`, a removed account's list is read again from storage: the name may
    /// already belong to a new account, which must not inherit the old one's blocks.
    public init(
        store: any BlockListStore, rosters: any RosterStore, sessions: SessionRegistry, logger: Logger,
        domain: JID? = nil, events: ServerEventBus? = nil
    ) {
        self.store = store
        self.rosters = rosters
        self.sessions = sessions
        self.logger = logger
        if let domain, let events {
            events.subscribe { [weak self] event in
                guard case .accountRemoved(let username) = event,
                    let owner = try? JID(localpart: username, domainpart: domain.domainpart)
                else { return }
                Task { await self?.reload(owner, username: username) }
            }
        }
    }

    /// `observer` hears of every stored change of a list, with its owner's username.
    public func observeListChanges(_ observer: @escaping @Sendable (String) -> Void) {
        listObservers.withLockedValue { $0.append(observer) }
    }

    /// Reads `username`'s list again: another node of a cluster changed it.
    public func reloadList(of username: String, domain: JID) async {
        guard let owner = try? JID(localpart: username, domainpart: domain.domainpart) else { return }
        await reload(owner, username: username)
    }

    /// Replaces the list in memory with what storage holds, unless the owner changed it
    /// meanwhile (then reads again).
    func reload(_ owner: JID, username: String) async {
        for _ in 0..<5 {
            let before = lists.withLockedValue { $0.changes[owner] ?? 0 }
            let entries: [String]
            do {
                entries = try await store.blockList(of: username)
            } catch {
                return logger.error("cannot reload a block list", metadata: ["user": "\(username)", "error": "\(error)"])
            }
            let list = Set(entries.compactMap { try? JID($0) })
            let applied = changeLists { state -> Bool in
                guard state.changes[owner] ?? 0 == before else { return false }
                state.blocked[owner] = list.isEmpty ? nil : list
                return true
            }
            if applied { return }
        }
    }

    /// Loads every account's block list; call once before the server accepts connections.
    /// One query for all of them: one per account kept a server with 100,000 accounts on
    /// PostgreSQL from listening for minutes.
    public func load(domain: JID) async throws {
        var loaded: [JID: Set<JID>] = [:]
        for (username, entries) in try await store.allBlockLists() {
            guard !entries.isEmpty, let owner = try? JID(localpart: username, domainpart: domain.domainpart) else { continue }
            loaded[owner] = Set(entries.compactMap { try? JID($0) })
        }
        changeLists { $0.blocked = loaded }
    }

    /// Every change of the lists goes through here, so `anyBlocks` stays true to them.
    private func changeLists<T>(_ body: (inout Lists) -> T) -> T {
        lists.withLockedValue { state in
            let result = body(&state)
            anyBlocks.store(!state.blocked.isEmpty, ordering: .releasing)
            return result
        }
    }

    public func register(in registry: inout ModuleRegistry) throws(ModuleRegistry.Error) {
        try registry.handle(.get, "blocklist", namespace: Self.namespace, for: .account) { [self] request, responder in
            guard request.isToOwnAccount else { return responder.error(StanzaError(.forbidden)) }
            request.session?.withPresence { $0.wantsBlocklistPushes = true }
            var list = XMLElement("blocklist", namespace: Self.namespace)
            for jid in blocked(by: request.from.bare).sorted() {
                list.append(XMLElement("item", ["jid": jid.description]))
            }
            responder.result(list)
        }
        try registry.handle(.set, "block", namespace: Self.namespace, for: .account, advertise: false) { [self] request, responder in
            change(request, responder, blocking: true)
        }
        try registry.handle(.set, "unblock", namespace: Self.namespace, for: .account, advertise: false) { [self] request, responder in
            change(request, responder, blocking: false)
        }
    }

    // MARK: DeliveryPolicy

    public func verdict(from sender: JID, to recipient: JID, stanza: XMLElement) -> DeliveryVerdict {
        guard anyBlocks.load(ordering: .acquiring) else { return .deliver }
        let (recipientBlocks, senderBlocks) = lists.withLockedValue { ($0.blocked[recipient.bare] ?? [], $0.blocked[sender.bare] ?? []) }
        let isPresence = stanza.name == "presence"
        let isRequest = stanza.name == "message" || (stanza.name == "iq" && (stanza.type == "get" || stanza.type == "set"))
        if matches(recipientBlocks, sender) {
            // §3.5: the blocked contact learns nothing more than that the recipient is
            // unavailable.
            return isRequest && stanza.type != "error" ? .reject(StanzaError(.serviceUnavailable)) : .drop
        }
        if matches(senderBlocks, recipient) {
            if isPresence || !isRequest { return .drop }
            return .reject(
                StanzaError(
                    .notAcceptable, text: "You have blocked \(recipient.bare).",
                    applicationCondition: XMLElement("blocked", namespace: Self.errorsNamespace)))
        }
        return .deliver
    }

    func blocked(by owner: JID) -> Set<JID> {
        lists.withLockedValue { $0.blocked[owner] ?? [] }
    }

    /// XEP-0191 §3.3 matching: an item is a domain, a bare JID (any of its resources) or a
    /// full JID.
    private func matches(_ list: Set<JID>, _ jid: JID) -> Bool {
        guard !list.isEmpty else { return false }
        return list.contains(jid) || list.contains(jid.bare)
            || list.contains { $0.isDomain && $0.domainpart == jid.domainpart }
    }

    // MARK: Block and unblock

    private func change(_ request: IQRequest, _ responder: IQResponder, blocking: Bool) {
        guard request.isToOwnAccount, let username = request.from.localpart else {
            return responder.error(StanzaError(.forbidden))
        }
        var jids: [JID] = []
        for item in request.payload.children("item", namespace: Self.namespace) {
            guard let value = item[attribute: "jid"], let jid = try? JID(value) else {
                return responder.error(StanzaError(.jidMalformed, text: "'\(item[attribute: "jid"] ?? "")' is not a JID."))
            }
            jids.append(jid)
        }
        if blocking, jids.isEmpty {
            return responder.error(StanzaError(.badRequest, text: "A block request names at least one JID."))
        }
        let owner = request.from.bare
        let payload = request.payload
        Task { [self] in
            do {
                let strings = jids.map(\.description)
                if blocking {
                    try await store.block(user: username, jids: strings)
                } else {
                    try await store.unblock(user: username, jids: strings)
                }
            } catch {
                return responder.error(StanzaError(.internalServerError, text: "The block list could not be changed."))
            }
            changeLists { lists in
                lists.changes[owner, default: 0] &+= 1
                var current = lists.blocked[owner] ?? []
                if blocking {
                    current.formUnion(jids)
                } else if jids.isEmpty {
                    current = []
                } else {
                    current.subtract(jids)
                }
                lists.blocked[owner] = current.isEmpty ? nil : current
            }
            for observer in listObservers.withLockedValue({ $0 }) { observer(username) }
            if blocking { await sendUnavailable(of: owner, to: jids) }
            responder.result()
            push(payload, to: owner)
        }
    }

    /// §3.3: the newly blocked see the user go offline; but only those who could see the
    /// user online at all, the subscribers (From or Both, RFC 6121 §4.2.2) and recipients
    /// of directed presence. Anyone else would learn the user's full JID from it.
    private func sendUnavailable(of owner: JID, to jids: [JID]) async {
        let available = sessions.sessions(of: owner).filter(\.isAvailable)
        guard !available.isEmpty, let username = owner.localpart else { return }
        let blocked = Set(jids)
        var subscribers: [JID] = []
        do {
            for item in try await rosters.roster(of: username).items where item.subscription == .from || item.subscription == .both {
                guard let contact = try? JID(item.contact) else { continue }
                if matches(blocked, contact) {
                    subscribers.append(contact)
                } else {
                    // A block of one resource of a subscriber: that resource goes without.
                    subscribers.append(contentsOf: jids.filter { $0.isFull && $0.bare == contact })
                }
            }
        } catch {
            logger.error("cannot read roster", metadata: ["user": "\(username)", "error": "\(error)"])
        }
        for session in available {
            let directed = session.withPresence { $0.directedPresence }.filter { matches(blocked, $0) }
            for recipient in Set(subscribers).union(directed) {
                let unavailable = XMLElement(
                    "presence", namespace: XMLNamespace.client,
                    ["from": session.jid.description, "to": recipient.description, "type": "unavailable"])
                deliverUnfiltered(unavailable, to: recipient)
            }
        }
    }

    private func push(_ payload: XMLElement, to owner: JID) {
        for session in sessions.sessions(of: owner) where session.withPresence({ $0.wantsBlocklistPushes }) {
            var push = XMLElement(
                "iq", namespace: XMLNamespace.client,
                ["to": session.jid.description, "type": "set", "id": "block-\(UInt32.random(in: .min ... .max))"])
            push.append(payload)
            session.deliver(push)
        }
    }

    private func deliverUnfiltered(_ presence: XMLElement, to jid: JID) {
        if jid.isFull {
            sessions.session(jid)?.deliver(presence)
        } else {
            for session in sessions.sessions(of: jid) where session.isAvailable { session.deliver(presence) }
        }
    }
}
