/// One contact in a user's roster (RFC 6121 §2.1.2).
public struct RosterItem: Sendable, Hashable {
    /// The contact's bare JID, normalised by the caller; storage compares it byte for byte.
    public var contact: String
    public var name: String?
    /// Order kept, no duplicates (storage drops a repeated name, keeping its first place).
    public var groups: [String]
    public var subscription: Subscription
    /// An outbound subscription request is pending (`ask='subscribe'`).
    public var askSubscribe: Bool
    /// The owner pre-approved an inbound request from this contact (RFC 6121 §3.4).
    public var approved: Bool
    /// The roster version at this item's last change. Set by the store: whatever `setItem`
    /// is given is replaced by the version of its transaction.
    public var version: Int64

    public init(
        contact: String, name: String? = nil, groups: [String] = [], subscription: Subscription = .none,
        askSubscribe: Bool = false, approved: Bool = false, version: Int64 = 0
    ) {
        self.contact = contact
        self.name = name
        self.groups = groups
        self.subscription = subscription
        self.askSubscribe = askSubscribe
        self.approved = approved
        self.version = version
    }
}

/// One entry of a roster delta (XEP-0237): the contact's state as of `version`.
public struct RosterChange: Sendable, Hashable {
    public var contact: String
    /// The item as it is now; nil when it was removed.
    public var item: RosterItem?
    /// The roster version of the change.
    public var version: Int64

    public init(contact: String, item: RosterItem?, version: Int64) {
        self.contact = contact
        self.item = item
        self.version = version
    }
}
