/// Namespaces of the profile, bookmark and presence extensions the client speaks. Kept apart
/// from ParleyCore's `XMLNamespace`, which the server's modules extend.
enum ProfileNamespace {
    static let pubsub = "http://jabber.org/protocol/pubsub"
    static let pubsubOwner = "http://jabber.org/protocol/pubsub#owner"
    static let pubsubEvent = "http://jabber.org/protocol/pubsub#event"
    static let pubsubErrors = "http://jabber.org/protocol/pubsub#errors"
    static let publishOptions = "http://jabber.org/protocol/pubsub#publish-options"
    static let nodeConfig = "http://jabber.org/protocol/pubsub#node_config"
    /// XEP-0084 User Avatar.
    static let avatarData = "urn:xmpp:avatar:data"
    static let avatarMetadata = "urn:xmpp:avatar:metadata"
    /// XEP-0172 User Nickname.
    static let nick = "http://jabber.org/protocol/nick"
    /// XEP-0054 vcard-temp and XEP-0153 vCard-based avatars.
    static let vcard = "vcard-temp"
    static let vcardUpdate = "vcard-temp:x:update"
    /// XEP-0115 Entity Capabilities.
    static let caps = "http://jabber.org/protocol/caps"
    /// XEP-0402 PEP Native Bookmarks, and its promise to keep XEP-0048 clients in step.
    static let bookmarks = "urn:xmpp:bookmarks:1"
    static let bookmarksCompat = "urn:xmpp:bookmarks:1#compat"
    /// XEP-0049 Private XML Storage holding XEP-0048 bookmarks.
    static let privateStorage = "jabber:iq:private"
    static let legacyBookmarks = "storage:bookmarks"
    /// XEP-0012 Last Activity.
    static let lastActivity = "jabber:iq:last"
    /// XEP-0352 Client State Indication.
    static let csi = "urn:xmpp:csi:0"

    static func notify(_ node: String) -> String { node + "+notify" }
}
