import ParleyCore

/// The XEP-0060 namespaces, and the errors of its §§6–8 with their pubsub-specific
/// conditions (`<presence-subscription-required xmlns='…#errors'/>` and the like).
enum PubSub {
    static let namespace = "http://jabber.org/protocol/pubsub"
    static let event = "http://jabber.org/protocol/pubsub#event"
    static let owner = "http://jabber.org/protocol/pubsub#owner"
    static let errors = "http://jabber.org/protocol/pubsub#errors"
    static let nodeConfig = "http://jabber.org/protocol/pubsub#node_config"
    static let publishOptions = "http://jabber.org/protocol/pubsub#publish-options"

    /// `#feature` names this server supports (XEP-0060 §10), for disco#info.
    static let features = [
        "access-open", "access-presence", "access-roster", "access-whitelist", "auto-create", "auto-subscribe", "config-node",
        "config-node-max", "create-nodes", "delete-items", "delete-nodes", "filtered-notifications", "item-ids",
        "last-published", "multi-items", "persistent-items", "presence-notifications", "publish", "publish-options",
        "purge-nodes", "retract-items", "retrieve-items", "retrieve-default",
    ].map { namespace + "#" + $0 }

    static func error(
        _ condition: StanzaErrorCondition, _ pubsubCondition: String? = nil, type: StanzaErrorType? = nil,
        feature: String? = nil, text: String
    ) -> StanzaError {
        var application: XMLElement? = nil
        if let pubsubCondition {
            var element = XMLElement(pubsubCondition, namespace: errors)
            if let feature { element.setAttribute("feature", feature) }
            application = element
        }
        return StanzaError(condition, type: type, text: text, applicationCondition: application)
    }

    static func nodeRequired() -> StanzaError {
        error(.badRequest, "nodeid-required", text: "The request names no node.")
    }

    static func noSuchNode(_ node: String) -> StanzaError {
        error(.itemNotFound, text: "There is no node '\(node)'.")
    }

    /// §7.1.3.1, §8: only the owner publishes to, configures or deletes a PEP node.
    static func ownerOnly(_ action: String) -> StanzaError {
        error(.forbidden, text: "Only the owner of this personal service may \(action).")
    }

    static func unsupported(_ feature: String, _ what: String) -> StanzaError {
        error(.featureNotImplemented, "unsupported", feature: feature, text: "\(what) is not supported by this PEP service.")
    }
}
