import Foundation

/// How one PEP node behaves (XEP-0060 §16.4 `pubsub#node_config`, the subset XEP-0163 needs).
/// Stored as a whole with its node, so an option added later needs no new column: a stored
/// configuration without it reads the default.
public struct PEPNodeConfiguration: Sendable, Hashable, Codable {
    /// Who may read the node's items and receive its notifications (XEP-0060 §4.5).
    public enum AccessModel: String, Sendable, Hashable, Codable, CaseIterable {
        case open, presence, roster, whitelist
    }

    /// When the last item is sent unasked (XEP-0060 §12.3; XEP-0163 §4.3.4).
    public enum SendLastPublishedItem: String, Sendable, Hashable, Codable, CaseIterable {
        case never
        case onSub = "on_sub"
        case onSubAndPresence = "on_sub_and_presence"
    }

    public var accessModel = AccessModel.presence
    /// Items kept; nil is `max`, whatever the server's maximum is.
    public var maxItems: Int? = 1
    /// Off, items are only broadcast, never stored (nor retrievable).
    public var persistItems = true
    public var sendLastPublishedItem = SendLastPublishedItem.onSubAndPresence
    public var deliverNotifications = true
    public var deliverPayloads = true
    public var notifyRetract = true
    public var notifyDelete = true
    public var title: String?
    public var nodeDescription: String?
    public var payloadType: String?
    /// For the `roster` access model: contacts in any of these roster groups may read.
    public var rosterGroupsAllowed: [String] = []

    public init() {}

    public init(from decoder: any Decoder) throws {
        let values = try decoder.container(keyedBy: CodingKeys.self)
        let defaults = PEPNodeConfiguration()
        accessModel = try values.decodeIfPresent(AccessModel.self, forKey: .accessModel) ?? defaults.accessModel
        maxItems = try values.decodeIfPresent(Int.self, forKey: .maxItems)
        persistItems = try values.decodeIfPresent(Bool.self, forKey: .persistItems) ?? defaults.persistItems
        sendLastPublishedItem =
            try values.decodeIfPresent(SendLastPublishedItem.self, forKey: .sendLastPublishedItem) ?? defaults.sendLastPublishedItem
        deliverNotifications = try values.decodeIfPresent(Bool.self, forKey: .deliverNotifications) ?? true
        deliverPayloads = try values.decodeIfPresent(Bool.self, forKey: .deliverPayloads) ?? true
        notifyRetract = try values.decodeIfPresent(Bool.self, forKey: .notifyRetract) ?? true
        notifyDelete = try values.decodeIfPresent(Bool.self, forKey: .notifyDelete) ?? true
        title = try values.decodeIfPresent(String.self, forKey: .title)
        nodeDescription = try values.decodeIfPresent(String.self, forKey: .nodeDescription)
        payloadType = try values.decodeIfPresent(String.self, forKey: .payloadType)
        rosterGroupsAllowed = try values.decodeIfPresent([String].self, forKey: .rosterGroupsAllowed) ?? []
    }
}

/// A node of a user's PEP service, with its configuration.
public struct PEPNode: Sendable, Hashable {
    public var name: String
    public var configuration: PEPNodeConfiguration

    public init(name: String, configuration: PEPNodeConfiguration) {
        self.name = name
        self.configuration = configuration
    }
}

/// One published item: its id, its payload as XML text (stored, never interpreted), and who
/// published it (the owner's bare JID for PEP).
public struct PEPItem: Sendable, Hashable {
    public var id: String
    public var payload: String
    public var publisher: String
    public var publishedAt: Date

    public init(id: String, payload: String, publisher: String, publishedAt: Date = Date()) {
        self.id = id
        self.payload = payload
        self.publisher = publisher
        self.publishedAt = publishedAt
    }
}

/// The personal publish-subscribe service of each account (XEP-0163): nodes and their items.
/// Users are canonical usernames. Everything goes with the account.
public protocol PEPStore: Sendable {
    /// Sorted by name; empty for an unknown user.
    func pepNodes(of user: String) async throws -> [PEPNode]

    func pepNode(_ node: String, of user: String) async throws -> PEPNode?

    /// Creates the node; false if it exists already. Throws `StorageError.quotaExceeded` when
    /// the user already has `maxNodes` nodes, `accountNotFound` for an unknown user.
    func createPEPNode(_ node: String, of user: String, configuration: PEPNodeConfiguration, maxNodes: Int) async throws -> Bool

    /// Replaces the configuration and keeps only the newest `keepItems` items; false if
    /// there is no such node.
    func configurePEPNode(_ node: String, of user: String, configuration: PEPNodeConfiguration, keepItems: Int) async throws -> Bool

    /// Deletes the node and its items; false if there was none.
    func deletePEPNode(_ node: String, of user: String) async throws -> Bool

    /// Stores `item` as the node's newest (replacing one with the same id), then keeps only
    /// the newest `keepItems`. Returns the ids of the items that made room, oldest first.
    /// Throws `StorageError.itemNotFound` if the node does not exist.
    func publishPEPItem(_ item: PEPItem, node: String, of user: String, keepItems: Int) async throws -> [String]

    /// The node's items, oldest first: those with `ids` (in the order asked, unknown ids
    /// skipped), or else the newest `newest` (all when nil).
    func pepItems(node: String, of user: String, ids: [String]?, newest: Int?) async throws -> [PEPItem]

    /// Removes one item; false if the node has no such item.
    func retractPEPItem(_ id: String, node: String, of user: String) async throws -> Bool

    /// Removes every item of the node; false if there is no such node.
    func purgePEPNode(_ node: String, of user: String) async throws -> Bool
}
