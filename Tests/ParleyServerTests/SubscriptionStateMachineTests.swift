import ParleyServer
import ParleyStorage
import Testing

/// Every row of RFC 6121 Appendix A (A.2 outbound, A.3 inbound), written as the RFC writes
/// states: "None", "None + Pending Out", "To + Pending In", …
@Suite struct SubscriptionStateMachineTests {
    static func state(_ text: String) -> SubscriptionState {
        let parts = text.components(separatedBy: " + ")
        let base = Subscription(rawValue: parts[0].lowercased())!
        return SubscriptionState(
            base, pendingOut: parts.contains("Pending Out"), pendingIn: parts.contains("Pending In"),
            preApproved: parts.contains("Pre-Approved"))
    }

    struct Row: Sendable, CustomTestStringConvertible {
        let from: String
        let to: String
        let forward: Bool
        var testDescription: String { "\(from) → \(to)\(forward ? " (forwarded)" : "")" }
    }

    static func row(_ from: String, _ to: String, _ forward: Bool) -> Row { Row(from: from, to: to, forward: forward) }

    // A.2.1 Outbound subscribe: the stanza is always routed.
    @Test(arguments: [
        row("None", "None + Pending Out", true), row("None + Pending Out", "None + Pending Out", true),
        row("None + Pending In", "None + Pending Out + Pending In", true),
        row("None + Pending Out + Pending In", "None + Pending Out + Pending In", true),
        row("To", "To", true), row("To + Pending In", "To + Pending In", true),
        row("From", "From + Pending Out", true), row("From + Pending Out", "From + Pending Out", true),
        row("Both", "Both", true),
    ])
    func outboundSubscribe(_ row: Row) { check(.outbound(.subscribe, Self.state(row.from)), row) }

    // A.2.2 Outbound unsubscribe.
    @Test(arguments: [
        row("None", "None", true), row("None + Pending Out", "None", true), row("None + Pending In", "None + Pending In", true),
        row("None + Pending Out + Pending In", "None + Pending In", true), row("To", "None", true),
        row("To + Pending In", "None + Pending In", true), row("From", "From", true),
        row("From + Pending Out", "From", true), row("Both", "From", true),
    ])
    func outboundUnsubscribe(_ row: Row) { check(.outbound(.unsubscribe, Self.state(row.from)), row) }

    // A.2.3 Outbound subscribed: only an answer to a pending request is routed; with nothing
    // pending it becomes a pre-approval (§3.4), unless the contact is already subscribed.
    @Test(arguments: [
        row("None + Pending In", "From", true), row("None + Pending Out + Pending In", "From + Pending Out", true),
        row("To + Pending In", "Both", true), row("None", "None + Pre-Approved", false),
        row("None + Pending Out", "None + Pending Out + Pre-Approved", false),
        row("To", "To + Pre-Approved", false), row("From", "From", false),
        row("From + Pending Out", "From + Pending Out", false), row("Both", "Both", false),
    ])
    func outboundSubscribed(_ row: Row) { check(.outbound(.subscribed, Self.state(row.from)), row) }

    // A.2.4 Outbound unsubscribed.
    @Test(arguments: [
        row("None", "None", false), row("None + Pending Out", "None + Pending Out", false),
        row("None + Pending In", "None", true), row("None + Pending Out + Pending In", "None + Pending Out", true),
        row("To", "To", false), row("To + Pending In", "To", true), row("From", "None", true),
        row("From + Pending Out", "None + Pending Out", true), row("Both", "To", true),
    ])
    func outboundUnsubscribed(_ row: Row) { check(.outbound(.unsubscribed, Self.state(row.from)), row) }

    // A.3.1 Inbound subscribe: delivered when it creates a pending request.
    @Test(arguments: [
        row("None", "None + Pending In", true), row("None + Pending Out", "None + Pending Out + Pending In", true),
        row("None + Pending In", "None + Pending In", false), row("To", "To + Pending In", true),
        row("To + Pending In", "To + Pending In", false),
    ])
    func inboundSubscribe(_ row: Row) { check(.inbound(.subscribe, Self.state(row.from)), row) }

    @Test(arguments: ["From", "From + Pending Out", "Both"])
    func inboundSubscribeWithExistingSubscriptionIsConfirmedAutomatically(_ from: String) {
        let outcome = SubscriptionStateMachine.inbound(.subscribe, Self.state(from))
        #expect(outcome.state == Self.state(from))
        #expect(!outcome.forward)
        #expect(outcome.autoReply == .subscribed)
    }

    @Test func preApprovedRequestIsGrantedWithoutAskingTheUser() {
        let approved = SubscriptionState(.to, preApproved: true)
        let outcome = SubscriptionStateMachine.inbound(.subscribe, approved)
        #expect(outcome.state == SubscriptionState(.both))
        #expect(outcome.autoReply == .subscribed)
        #expect(!outcome.forward)
        // A.2.3 / §3.4: "subscribed" with nothing pending pre-approves instead of being sent.
        let preApproval = SubscriptionStateMachine.outbound(.subscribed, SubscriptionState(.none))
        #expect(preApproval.state == SubscriptionState(.none, preApproved: true))
        #expect(!preApproval.forward)
        // "unsubscribed" withdraws a pre-approval.
        #expect(SubscriptionStateMachine.outbound(.unsubscribed, preApproval.state).state == SubscriptionState(.none))
    }

    // A.3.2 Inbound unsubscribe.
    @Test(arguments: [
        row("None", "None", false), row("None + Pending Out", "None + Pending Out", false),
        row("None + Pending In", "None", true), row("None + Pending Out + Pending In", "None + Pending Out", true),
        row("To", "To", false), row("To + Pending In", "To", true), row("From", "None", true),
        row("From + Pending Out", "None + Pending Out", true), row("Both", "To", true),
    ])
    func inboundUnsubscribe(_ row: Row) { check(.inbound(.unsubscribe, Self.state(row.from)), row) }

    // A.3.3 Inbound subscribed: only an answer to our request counts.
    @Test(arguments: [
        row("None", "None", false), row("None + Pending Out", "To", true), row("None + Pending In", "None + Pending In", false),
        row("None + Pending Out + Pending In", "To + Pending In", true), row("To", "To", false),
        row("To + Pending In", "To + Pending In", false), row("From", "From", false),
        row("From + Pending Out", "Both", true), row("Both", "Both", false),
    ])
    func inboundSubscribed(_ row: Row) { check(.inbound(.subscribed, Self.state(row.from)), row) }

    // A.3.4 Inbound unsubscribed.
    @Test(arguments: [
        row("None", "None", false), row("None + Pending Out", "None", true), row("None + Pending In", "None + Pending In", false),
        row("None + Pending Out + Pending In", "None + Pending In", true), row("To", "None", true),
        row("To + Pending In", "None + Pending In", true), row("From", "From", false),
        row("From + Pending Out", "From", true), row("Both", "From", true),
    ])
    func inboundUnsubscribed(_ row: Row) { check(.inbound(.unsubscribed, Self.state(row.from)), row) }

    private func check(_ outcome: SubscriptionOutcome, _ row: Row) {
        #expect(outcome.state == Self.state(row.to), "\(row.testDescription)")
        #expect(outcome.forward == row.forward, "\(row.testDescription)")
    }
}

extension SubscriptionOutcome {
    static func outbound(_ request: SubscriptionRequest, _ state: SubscriptionState) -> SubscriptionOutcome {
        SubscriptionStateMachine.outbound(request, state)
    }

    static func inbound(_ request: SubscriptionRequest, _ state: SubscriptionState) -> SubscriptionOutcome {
        SubscriptionStateMachine.inbound(request, state)
    }
}
