import Foundation

/// An inbound subscription request not yet answered (RFC 6121 §3.1.3), kept even when the
/// contact is not in the roster.
public struct PendingSubscription: Sendable, Hashable {
    /// Who asked (bare JID).
    public var contact: String
    /// The subscribe presence as received (XML), re-delivered at every login until answered.
    public var stanza: String
    /// Stored with millisecond precision.
    public var receivedAt: Date

    public init(contact: String, stanza: String, receivedAt: Date) {
        self.contact = contact
        self.stanza = stanza
        self.receivedAt = receivedAt
    }
}
