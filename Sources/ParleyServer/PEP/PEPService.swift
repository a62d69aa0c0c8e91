import Foundation
import Logging
import ParleyCore
import ParleyStorage

/// The personal publish-subscribe service of every local account (XEP-0163 over the
/// XEP-0060 subset it needs). The iq handlers of `PEPModule` call it, and so may other
/// modules (vCard-avatar sync, bookmarks conversion) through the same entry points:
///
/// - `publish(owner:node:itemID:payload:options:)` stores an item (creating the node, with
///   `options` as its configuration, if needed) and notifies everyone entitled to it;
/// - `items(owner:node:requester:ids:max:)` reads items, as `requester` may;
/// - `retract(owner:node:itemID:notify:)` removes one;
/// - every change is also announced on the `ServerEventBus` (`.pepItemPublished`,
///   `.pepItemRetracted`, `.pepNodeDeleted`) for modules that mirror PEP data elsewhere.
///
/// Refusals are thrown as `StanzaError`s carrying the XEP-0060 conditions; anything else
/// thrown is a storage failure. Changes to one owner's service run one at a time, in order.
public final class PEPService: Sendable {
    public struct Limits: Sendable, Hashable {
        /// The largest `pubsub#max_items` a node may have; `max` means this.
        public var maxItemsPerNode = 256
        /// The largest item payload, as serialized XML.
        public var maxPayloadBytes = 65_536
        public var maxNodesPerAccount = 64
        /// How long the server waits for a client's answer to its disco#info query.
        public var capsQueryTimeout: Duration = .seconds(30)
        public init() {}
    }

    let domain: JID
    let store: any PEPStore
    let rosters: any RosterStore
    let sessions: SessionRegistry
    let policy: any DeliveryPolicy
    let events: ServerEventBus
    let requests: ServerIQRequests
    let limits: Limits
    let logger: Logger
    let interests: NotifyInterests
    let contactJIDs = ContactJIDs()
    let recipientCache: PEPRecipients
    private let queue = UserQueue()

    public init(
        domain: JID, store: any PEPStore, rosters: any RosterStore, sessions: SessionRegistry, policy: any DeliveryPolicy,
        events: ServerEventBus, requests: ServerIQRequests, limits: Limits = Limits(), logger: Logger
    ) {
        self.domain = domain
        self.store = store
        self.rosters = rosters
        self.sessions = sessions
        self.policy = policy
        self.events = events
        self.requests = requests
        self.limits = limits
        self.logger = logger
        let observable = rosters as? any RosterChangeObserving
        let recipientCache = PEPRecipients(enabled: observable != nil)
        self.recipientCache = recipientCache
        self.interests = NotifyInterests { recipientCache.sessionsChanged() }
        observable?.observeRosterChanges { username in recipientCache.rosterChanged(username) }
        sessions.observeRemoteChanges { recipientCache.sessionsChanged() }
        events.subscribe { [weak self] event in
            guard let self else { return }
            switch event {
            case .sessionBound(let session):
                // A new account of a deleted one's name must not inherit its contacts.
                if let username = session.jid.localpart { recipientCache.rosterChanged(username) }
            case .accountRemoved(let username):
                recipientCache.rosterChanged(username)
            case .availablePresence(let session, let presence, let initial):
                // Without caps (most logins of simple clients) nothing waits: no task for it.
                guard EntityCapabilities.Announcement(presence: presence) != nil else {
                    return self.presenceChangedWithoutCaps(session, initial: initial)
                }
                Task { await self.presenceChanged(session, presence, initial: initial) }
            case .presenceSubscriptionApproved(let owner, let subscriber):
                Task { await self.subscriptionApproved(owner: owner, subscriber: subscriber) }
            case .sessionEnded(let session):
                self.interests.forget(session.jid)
                recipientCache.sessionsChanged()
            default:
                break
            }
        }
    }

    // MARK: Publishing

    /// Publishes one item (XEP-0060 §7.1) as the owner; returns its id (generated when
    /// `itemID` is nil). `options` are publish-options fields (§7.1.5): the configuration of
    /// a node this creates, and a precondition on an existing one.
    @discardableResult
    public func publish(
        owner: JID, node: String, itemID: String? = nil, payload: XMLElement, options: [(name: String, values: [String])]? = nil
    ) async throws -> String {
        try await publish(owner: owner, node: node, items: [(itemID, payload)], options: options)[0]
    }

    func publish(
        owner: JID, node: String, items: [(id: String?, payload: XMLElement)], options: [(name: String, values: [String])]?
    ) async throws -> [String] {
        guard let username = owner.localpart else { throw PubSub.ownerOnly("publish") }
        guard !node.isEmpty else { throw PubSub.nodeRequired() }
        let prepared = try items.map { id, payload in
            let text = payload.xmlString()
            guard text.utf8.count <= limits.maxPayloadBytes else {
                throw PubSub.error(
                    .notAcceptable, "payload-too-big",
                    text: "An item payload may be at most \(limits.maxPayloadBytes) bytes; this one is \(text.utf8.count).")
            }
            return PEPItem(id: id ?? TimeOrderedUUID.make(), payload: text, publisher: owner.bare.description)
        }
        let maxItems = limits.maxItemsPerNode
        return try await serialized(owner) { [self] in
            let configuration = try await nodeForPublishing(node, of: username, options: options)
            let kept = configuration.itemsKept(serverMaxItems: maxItems)
            for (item, (_, payload)) in zip(prepared, items) {
                var dropped: [String] = []
                if kept > 0 { dropped = try await store.publishPEPItem(item, node: node, of: username, keepItems: kept) }
                if configuration.deliverNotifications {
                    var element = XMLElement("item", ["id": item.id])
                    if configuration.deliverPayloads { element.append(payload) }
                    await notify(owner: owner.bare, node: node, configuration: configuration, event: Self.itemsEvent(node, element))
                }
                events.publish(.pepItemPublished(owner: owner.bare, node: node, itemID: item.id, payload: payload))
                for id in dropped { events.publish(.pepItemRetracted(owner: owner.bare, node: node, itemID: id)) }
            }
            return prepared.map(\.id)
        }
    }

    /// The node to publish to: created (auto-create, §7.1.4) with `options` if missing,
    /// or checked against them (§7.1.5) if it exists.
    private func nodeForPublishing(
        _ node: String, of username: String, options: [(name: String, values: [String])]?
    ) async throws -> PEPNodeConfiguration {
        if let existing = try await store.pepNode(node, of: username) {
            if let options, let field = existing.configuration.firstUnmet(options, serverMaxItems: limits.maxItemsPerNode) {
                throw PubSub.error(
                    .conflict, "precondition-not-met",
                    text: "The node's \(field) is not what the publish-options require; configure the node first.")
            }
            return existing.configuration
        }
        let configuration = try PEPNodeConfiguration().applying(options ?? [], serverMaxItems: limits.maxItemsPerNode)
        try await create(node, of: username, configuration: configuration)
        return configuration
    }

    func create(_ node: String, of username: String, configuration: PEPNodeConfiguration) async throws {
        do {
            guard try await store.createPEPNode(node, of: username, configuration: configuration, maxNodes: limits.maxNodesPerAccount)
            else { throw PubSub.error(.conflict, text: "The node '\(node)' exists already.") }
        } catch StorageError.quotaExceeded(let limit) {
            throw PubSub.error(.policyViolation, text: "An account may have at most \(limit) PEP nodes; delete one first.")
        }
    }

    // MARK: Reading

    /// The node's items as `requester` may see them (§6.5): those with `ids`, or the newest
    /// `max`, or all, oldest first.
    public func items(owner: JID, node: String, requester: JID, ids: [String]? = nil, max: Int? = nil) async throws -> [PEPItem] {
        guard let username = owner.localpart else { throw PubSub.noSuchNode(node) }
        guard !node.isEmpty else { throw PubSub.nodeRequired() }
        let existing = try await store.pepNode(node, of: username)
        // A missing node is reported only to those who could read it if it existed, as a
        // node of the default configuration.
        let configuration = existing?.configuration ?? PEPNodeConfiguration()
        if let refusal = try await refusal(of: requester, owner: owner, configuration: configuration) { throw refusal }
        guard existing != nil else { throw PubSub.noSuchNode(node) }
        guard configuration.persistItems else {
            throw PubSub.unsupported("persistent-items", "Retrieving items of a node that does not persist them")
        }
        let items = try await store.pepItems(node: node, of: username, ids: ids, newest: max)
        if let ids, !ids.isEmpty, items.isEmpty {
            throw PubSub.error(.itemNotFound, text: "The node '\(node)' has no item with that id.")
        }
        return items
    }

    /// Why `requester` may not read a node of this configuration, nil if it may.
    func refusal(of requester: JID, owner: JID, configuration: PEPNodeConfiguration) async throws -> StanzaError? {
        if requester.bare == owner.bare || configuration.accessModel == .open { return nil }
        var item: RosterItem? = nil
        if configuration.accessModel != .whitelist, let username = owner.localpart {
            let contact = requester.bare.description
            item = try await rosters.roster(of: username).items.first { $0.contact == contact }
        }
        return PEPAccess.refusal(of: requester, owner: owner, configuration: configuration, rosterItem: item)
    }

    // MARK: Removing

    /// Retracts one item (§7.2); with `notify`, entitled resources are told (§7.2.2.1).
    public func retract(owner: JID, node: String, itemID: String, notify: Bool) async throws {
        guard let username = owner.localpart else { throw PubSub.ownerOnly("retract items") }
        try await serialized(owner) { [self] in
            guard let existing = try await store.pepNode(node, of: username) else { throw PubSub.noSuchNode(node) }
            guard try await store.retractPEPItem(itemID, node: node, of: username) else {
                throw PubSub.error(.itemNotFound, text: "The node '\(node)' has no item '\(itemID)'.")
            }
            let configuration = existing.configuration
            if notify, configuration.notifyRetract, configuration.deliverNotifications {
                let event = Self.itemsEvent(node, XMLElement("retract", ["id": itemID]))
                await self.notify(owner: owner.bare, node: node, configuration: configuration, event: event)
            }
            events.publish(.pepItemRetracted(owner: owner.bare, node: node, itemID: itemID))
        }
    }

    /// Deletes a node and its items (§8.4), telling entitled resources.
    public func delete(owner: JID, node: String) async throws {
        guard let username = owner.localpart else { throw PubSub.ownerOnly("delete nodes") }
        try await serialized(owner) { [self] in
            guard let existing = try await store.pepNode(node, of: username) else { throw PubSub.noSuchNode(node) }
            // Who is entitled is decided while the node still exists.
            let recipients = existing.configuration.notifyDelete ? await self.recipients(owner: owner.bare, node: node, configuration: existing.configuration) : []
            guard try await store.deletePEPNode(node, of: username) else { throw PubSub.noSuchNode(node) }
            send(Self.event(XMLElement("delete", ["node": node])), from: owner.bare, to: recipients)
            events.publish(.pepNodeDeleted(owner: owner.bare, node: node))
        }
    }

    /// Removes every item of a node (§8.5), telling entitled resources.
    func purge(owner: JID, node: String) async throws {
        guard let username = owner.localpart else { throw PubSub.ownerOnly("purge nodes") }
        try await serialized(owner) { [self] in
            guard let existing = try await store.pepNode(node, of: username) else { throw PubSub.noSuchNode(node) }
            let removed = try await store.pepItems(node: node, of: username, ids: nil, newest: nil)
            _ = try await store.purgePEPNode(node, of: username)
            if existing.configuration.deliverNotifications {
                await notify(owner: owner.bare, node: node, configuration: existing.configuration, event: Self.event(XMLElement("purge", ["node": node])))
            }
            for item in removed { events.publish(.pepItemRetracted(owner: owner.bare, node: node, itemID: item.id)) }
        }
    }

    /// Replaces a node's configuration (§8.2.3), dropping items beyond its new `max_items`.
    func configure(owner: JID, node: String, _ change: @escaping @Sendable (PEPNodeConfiguration) throws -> PEPNodeConfiguration) async throws {
        guard let username = owner.localpart else { throw PubSub.ownerOnly("configure nodes") }
        try await serialized(owner) { [self] in
            guard let existing = try await store.pepNode(node, of: username) else { throw PubSub.noSuchNode(node) }
            let configuration = try change(existing.configuration)
            _ = try await store.configurePEPNode(
                node, of: username, configuration: configuration, keepItems: configuration.itemsKept(serverMaxItems: limits.maxItemsPerNode))
        }
    }

    // MARK: Helpers

    /// Runs one change of `owner`'s service after the ones before it.
    func serialized<T: Sendable>(_ owner: JID, _ work: @escaping @Sendable () async throws -> T) async throws -> T {
        let result: Result<T, any Error> = await withCheckedContinuation { continuation in
            queue.enqueue(owner.bare.description) {
                do {
                    continuation.resume(returning: .success(try await work()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }

}
