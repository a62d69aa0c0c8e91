import ParleyStorage

/// One side's view of a subscription between a user and a contact: the state that the
/// tables of RFC 6121 Appendix A move between. "Pending out" is the roster item's `ask`;
/// "pending in" is an unanswered request from the contact.
public struct SubscriptionState: Sendable, Hashable {
    public var subscription: Subscription
    public var pendingOut: Bool
    public var pendingIn: Bool
    /// A pre-approval (RFC 6121 §3.4): the next request from the contact is accepted at once.
    public var preApproved: Bool

    public init(_ subscription: Subscription = .none, pendingOut: Bool = false, pendingIn: Bool = false, preApproved: Bool = false) {
        self.subscription = subscription
        self.pendingOut = pendingOut
        self.pendingIn = pendingIn
        self.preApproved = preApproved
    }

    var hasFrom: Bool { subscription == .from || subscription == .both }
    var hasTo: Bool { subscription == .to || subscription == .both }

    mutating func addFrom() { subscription = hasTo ? .both : .from }
    mutating func addTo() { subscription = hasFrom ? .both : .to }
    mutating func removeFrom() { subscription = hasTo ? .to : .none }
    mutating func removeTo() { subscription = hasFrom ? .from : .none }
}

public enum SubscriptionRequest: String, Sendable {
    case subscribe, subscribed, unsubscribe, unsubscribed
}

/// What the server does after applying a subscription stanza to one side's state.
public struct SubscriptionOutcome: Sendable, Equatable {
    public var state: SubscriptionState
    /// Outbound: route the stanza on to the contact. Inbound: deliver it to the user.
    public var forward: Bool
    /// Inbound only: answer on the user's behalf instead of asking them.
    public var autoReply: SubscriptionRequest?
}

/// RFC 6121 Appendix A. Outbound tables (A.2) apply at the sender's server to the sender's
/// state toward the recipient; inbound tables (A.3) at the recipient's server to the
/// recipient's state toward the sender. With no federation both run here, one after the other.
public enum SubscriptionStateMachine {
    public static func outbound(_ request: SubscriptionRequest, _ state: SubscriptionState) -> SubscriptionOutcome {
        var next = state
        switch request {
        case .subscribe:
            // A.2.1: ask, unless the subscription already exists; the request is always sent,
            // so a contact's server can re-confirm a subscription the user's client forgot.
            if !state.hasTo { next.pendingOut = true }
            return SubscriptionOutcome(state: next, forward: true)
        case .unsubscribe:
            // A.2.2
            next.pendingOut = false
            next.removeTo()
            return SubscriptionOutcome(state: next, forward: true)
        case .subscribed:
            // A.2.3: approving a pending request; with none pending it is a pre-approval
            // (§3.4), kept here and not sent.
            if state.pendingIn {
                next.pendingIn = false
                next.preApproved = false
                next.addFrom()
                return SubscriptionOutcome(state: next, forward: true)
            }
            if !state.hasFrom { next.preApproved = true }
            return SubscriptionOutcome(state: next, forward: false)
        case .unsubscribed:
            // A.2.4: refusing a request or cancelling the contact's subscription; also
            // withdraws a pre-approval.
            next.preApproved = false
            if state.pendingIn || state.hasFrom {
                next.pendingIn = false
                next.removeFrom()
                return SubscriptionOutcome(state: next, forward: true)
            }
            return SubscriptionOutcome(state: next, forward: false)
        }
    }

    public static func inbound(_ request: SubscriptionRequest, _ state: SubscriptionState) -> SubscriptionOutcome {
        var next = state
        switch request {
        case .subscribe:
            // A.3.1, with §3.1.3's duties: an existing subscription is confirmed again, a
            // pre-approved one is granted, anything else waits for the user.
            if state.hasFrom { return SubscriptionOutcome(state: state, forward: false, autoReply: .subscribed) }
            if state.preApproved {
                next.preApproved = false
                next.pendingIn = false
                next.addFrom()
                return SubscriptionOutcome(state: next, forward: false, autoReply: .subscribed)
            }
            next.pendingIn = true
            return SubscriptionOutcome(state: next, forward: !state.pendingIn)
        case .unsubscribe:
            // A.3.2
            next.pendingIn = false
            next.removeFrom()
            return SubscriptionOutcome(state: next, forward: next != state)
        case .subscribed:
            // A.3.3: only an answer to our own request counts.
            guard state.pendingOut else { return SubscriptionOutcome(state: state, forward: false) }
            next.pendingOut = false
            next.addTo()
            return SubscriptionOutcome(state: next, forward: true)
        case .unsubscribed:
            // A.3.4
            next.pendingOut = false
            next.removeTo()
            return SubscriptionOutcome(state: next, forward: next != state)
        }
    }
}
