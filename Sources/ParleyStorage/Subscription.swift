/// The subscription state of a roster item (RFC 6121 §2.1.2.5), from the roster owner's side.
public enum Subscription: String, Sendable, Hashable, CaseIterable {
    /// Neither sees the other's presence.
    case none
    /// The owner sees the contact's presence.
    case to
    /// The contact sees the owner's presence.
    case from
    /// Both see each other's presence.
    case both
}
