import ParleyCore
import ParleyStorage

/// The owner's use cases (XEP-0060 §8 in `pubsub#owner`): the node configuration form,
/// the default configuration, node deletion and purge. Nobody but the owner gets anywhere.
extension PEPModule {
    static func ownerGet(_ request: IQRequest, _ service: PEPService) async throws -> XMLElement? {
        guard request.isToOwnAccount, let username = request.to.localpart else { throw PubSub.ownerOnly("manage nodes") }
        let action = try action(of: request)
        switch action.name {
        case "configure":
            let node = try node(of: action)
            guard let existing = try await service.store.pepNode(node, of: username) else { throw PubSub.noSuchNode(node) }
            return reply(XMLElement("configure", ["node": node], [existing.configuration.form()]), namespace: PubSub.owner)
        case "default":
            return reply(XMLElement("default", [:], [PEPNodeConfiguration().form()]), namespace: PubSub.owner)
        case "affiliations":
            throw PubSub.unsupported("modify-affiliations", "Managing affiliations")
        case "subscriptions":
            throw PubSub.unsupported("manage-subscriptions", "Managing subscriptions")
        default:
            throw PubSub.unsupported(action.name, "<\(action.name)/>")
        }
    }

    static func ownerSet(_ request: IQRequest, _ service: PEPService) async throws -> XMLElement? {
        guard request.isToOwnAccount else { throw PubSub.ownerOnly("manage nodes") }
        let action = try action(of: request)
        switch action.name {
        case "configure":
            let node = try node(of: action)
            guard let form = PEPDataForm.first(in: action) else {
                throw StanzaError(.badRequest, text: "A configuration carries a data form.")
            }
            // §8.2.4: cancelling changes nothing.
            if form.type == "cancel" { return nil }
            guard form.type == "submit", form.formType == nil || form.formType == PubSub.nodeConfig else {
                throw PubSub.error(.badRequest, "invalid-options", text: "Submit a form of FORM_TYPE \(PubSub.nodeConfig).")
            }
            let maxItems = service.limits.maxItemsPerNode
            try await service.configure(owner: request.to, node: node) { try $0.applying(form.fields, serverMaxItems: maxItems) }
            return nil
        case "delete":
            try await service.delete(owner: request.to, node: try node(of: action))
            return nil
        case "purge":
            try await service.purge(owner: request.to, node: try node(of: action))
            return nil
        case "affiliations":
            throw PubSub.unsupported("modify-affiliations", "Managing affiliations")
        case "subscriptions":
            throw PubSub.unsupported("manage-subscriptions", "Managing subscriptions")
        default:
            throw PubSub.unsupported(action.name, "<\(action.name)/>")
        }
    }
}
