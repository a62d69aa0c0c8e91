import ParleyCore
import ParleyStorage

/// Who may read a node's items and receive its notifications (XEP-0060 §4.5 access models,
/// with XEP-0163's `presence` default), decided from the owner's roster item for the
/// requester. The owner may always.
enum PEPAccess {
    /// nil when `requester` (a bare JID) may read; otherwise the error §6.5.9 gives for the
    /// model that refuses it.
    static func refusal(
        of requester: JID, owner: JID, model: PEPNodeConfiguration.AccessModel, rosterGroupsAllowed: [String] = [],
        rosterItem: RosterItem?
    ) -> StanzaError? {
        if requester.bare == owner.bare { return nil }
        switch model {
        case .open:
            return nil
        case .presence:
            if let rosterItem, rosterItem.subscription == .from || rosterItem.subscription == .both { return nil }
            return PubSub.error(
                .notAuthorized, "presence-subscription-required",
                text: "Only contacts subscribed to \(owner)'s presence may read this node.")
        case .roster:
            if let rosterItem, !Set(rosterItem.groups).isDisjoint(with: rosterGroupsAllowed) { return nil }
            return PubSub.error(
                .notAuthorized, "not-in-roster-group", text: "Only contacts in the roster groups \(owner) allows may read this node.")
        case .whitelist:
            return PubSub.error(.notAllowed, "closed-node", text: "Only \(owner) may read this node.")
        }
    }

    static func refusal(of requester: JID, owner: JID, configuration: PEPNodeConfiguration, rosterItem: RosterItem?) -> StanzaError? {
        refusal(
            of: requester, owner: owner, model: configuration.accessModel, rosterGroupsAllowed: configuration.rosterGroupsAllowed,
            rosterItem: rosterItem)
    }
}
