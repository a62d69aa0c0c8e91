import Logging
import ParleyCore
import ParleyStorage

/// XEP-0411 / XEP-0402 §5.3 compat: one list of conference bookmarks seen two ways.
/// `<storage xmlns='storage:bookmarks'/>` written through private storage (XEP-0048 over
/// XEP-0049) is mirrored to the PEP node `urn:xmpp:bookmarks:1` (one item per room), and a
/// publish or retraction there is mirrored back into private storage. As in
/// `AvatarConversion`, each job copies the current state of the side that changed and
/// writes only the differences, one account's jobs in order, so the mirror's own writes end
/// in a no-op. XEP-0048 URL bookmarks have no XEP-0402 form and stay in private storage.
public final class BookmarksConversion: ServerModule {
    public static let compatFeature = "urn:xmpp:bookmarks:1#compat"
    static let node = "urn:xmpp:bookmarks:1"
    static let legacyNamespace = "storage:bookmarks"
    /// XEP-0402 §5: bookmarks are private and the whole list is kept (Prosody forces these
    /// on the node too, since clients rely on the conversion to keep their passwords private).
    static let nodeOptions: [(name: String, values: [String])] = [
        ("pubsub#persist_items", ["true"]), ("pubsub#max_items", ["max"]),
        ("pubsub#send_last_published_item", ["never"]), ("pubsub#access_model", ["whitelist"]),
    ]

    let pep: PEPService
    let profiles: ProfileService
    let logger: Logger
    let queue = UserQueue()
    let ownWrites = MirrorWrites()

    public init(pep: PEPService, profiles: ProfileService, events: ServerEventBus, logger: Logger) {
        self.pep = pep
        self.profiles = profiles
        self.logger = logger
        profiles.observeAwaiting { change in
            guard case .privateXML(let username, "storage", Self.legacyNamespace, _, let origin) = change, origin != nil else { return }
            // Done before the client's reply, as Prosody's mod_bookmarks does: a client reading
            // PEP right after finds the list, and no mirror job outlives the request.
            await self.queue.enqueue(username) { await self.copyPrivateToPEP(username) }.value
        }
        events.subscribe { event in
            switch event {
            case .pepItemPublished(let owner, Self.node, let itemID, _), .pepItemRetracted(let owner, Self.node, let itemID):
                guard let username = owner.localpart, !self.ownWrites.isOwn(.init(username: username, node: Self.node, itemID: itemID))
                else { return }
                self.queue.enqueue(username) { await self.copyPEPToPrivate(username) }
            case .pepNodeDeleted(let owner, Self.node):
                guard let username = owner.localpart else { return }
                self.queue.enqueue(username) { await self.copyPEPToPrivate(username) }
            case .pepItemPublished(let owner, Self.legacyNamespace, let itemID, _):
                guard let username = owner.localpart,
                    !self.ownWrites.isOwn(.init(username: username, node: Self.legacyNamespace, itemID: itemID))
                else { return }
                self.queue.enqueue(username) { await self.copyLegacyPEPToPrivate(username) }
            default:
                return
            }
        }
    }

    /// Shown on the account's disco#info to its owner (XEP-0398 §3, XEP-0402 §5.3).
    public func register(in registry: inout ModuleRegistry) throws(ModuleRegistry.Error) {
        registry.advertise(Self.compatFeature, for: .account)
    }

    // MARK: Private storage → PEP

    func copyPrivateToPEP(_ username: String) async {
        guard let owner = try? JID(localpart: username, domainpart: pep.domain.domainpart) else { return }
        do {
            let storage = try await profiles.privateXML(of: username, [("storage", Self.legacyNamespace)]).first ?? nil
            let wanted = storage.map(Bookmark.list(inLegacy:)) ?? []
            guard wanted.count <= pep.limits.maxItemsPerNode else {
                // Publishing them all would push the oldest out of the node, and that
                // retraction would then come back here as a removal.
                return logger.warning(
                    "too many bookmarks to mirror to PEP (XEP-0411)",
                    metadata: ["user": "\(username)", "count": "\(wanted.count)", "limit": "\(pep.limits.maxItemsPerNode)"])
            }
            let current = try await pepBookmarks(of: username)
            let existing = try await pep.store.pepNode(Self.node, of: username)
            if let configuration = existing?.configuration, configuration.accessModel != .whitelist || configuration.maxItems != nil {
                try await pep.configure(owner: owner, node: Self.node) { configuration in
                    var forced = configuration
                    forced.accessModel = .whitelist
                    forced.maxItems = nil
                    return forced
                }
            }
            // Keyed by item id: an item whose id is not the room's JID as written is replaced.
            let currentByID = Dictionary(current.map { ($0.itemID, $0.bookmark) }, uniquingKeysWith: { _, last in last })
            let wantedJIDs = Set(wanted.map(\.jid))
            var created = existing != nil
            for bookmark in wanted where currentByID[bookmark.jid] != bookmark {
                let options = created ? nil : Self.nodeOptions
                try await ownWrites.during(.init(username: username, node: Self.node, itemID: bookmark.jid)) {
                    _ = try await pep.publish(
                        owner: owner, node: Self.node, itemID: bookmark.jid, payload: bookmark.pepElement, options: options)
                }
                created = true
            }
            for (itemID, _) in current where !wantedJIDs.contains(itemID) {
                try await ownWrites.during(.init(username: username, node: Self.node, itemID: itemID)) {
                    try await pep.retract(owner: owner, node: Self.node, itemID: itemID, notify: true)
                }
            }
            try await refreshLegacyPEP(of: owner, with: storage ?? XMLElement("storage", namespace: Self.legacyNamespace))
        } catch {
            logger.warning(
                "cannot mirror private bookmarks to PEP (XEP-0411)", metadata: ["user": "\(username)", "error": "\(error)"])
        }
    }

    // MARK: PEP → private storage

    func copyPEPToPrivate(_ username: String) async {
        do {
            let fromPEP = try await pepBookmarks(of: username).map(\.bookmark)
            let stored = try await profiles.privateXML(of: username, [("storage", Self.legacyNamespace)]).first ?? nil
            let inPrivate = stored.map(Bookmark.list(inLegacy:)) ?? []
            guard Self.byJID(fromPEP) != Self.byJID(inPrivate) else { return }
            var storage = XMLElement("storage", namespace: Self.legacyNamespace)
            for bookmark in fromPEP { storage.append(bookmark.legacyElement) }
            // URL bookmarks and anything else XEP-0402 does not carry stay as they were.
            for other in stored?.elements ?? [] where !(other.name == "conference" && other.namespace == Self.legacyNamespace) {
                storage.append(other)
            }
            try await profiles.setPrivateXML([storage], of: username)
            if let owner = try? JID(localpart: username, domainpart: pep.domain.domainpart) {
                try await refreshLegacyPEP(of: owner, with: storage)
            }
        } catch {
            logger.warning(
                "cannot mirror PEP bookmarks to private storage (XEP-0411)", metadata: ["user": "\(username)", "error": "\(error)"])
        }
    }

    // MARK: Helpers

    /// The node's bookmarks with their item ids, oldest first; items that are not XEP-0402
    /// conferences of a room JID are left out (and left alone).
    func pepBookmarks(of username: String) async throws -> [(itemID: String, bookmark: Bookmark)] {
        try await pep.store.pepItems(node: Self.node, of: username, ids: nil, newest: nil).compactMap { item in
            guard let bookmark = ProfileXML.parse(item.payload).flatMap({ Bookmark(jid: item.id, pep: $0) }) else { return nil }
            return (item.id, bookmark)
        }
    }

    private static func byJID(_ bookmarks: [Bookmark]) -> [String: Bookmark] {
        Dictionary(bookmarks.map { ($0.jid, $0) }, uniquingKeysWith: { _, last in last })
    }
}
