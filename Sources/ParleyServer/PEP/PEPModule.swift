import ParleyCore
import ParleyStorage

/// XEP-0163 on every account's bare JID: the `pubsub` iqs of XEP-0060 §§6–7 (items,
/// publish with publish-options, retract, create, and the minimal subscription and
/// affiliation answers PEP's implicit subscriptions allow) and, in `+Owner`, those of §8.
/// The work is `PEPService`'s; this reads the requests and writes the answers.
public struct PEPModule: ServerModule {
    let service: PEPService

    public init(service: PEPService) {
        self.service = service
    }

    public func register(in registry: inout ModuleRegistry) throws(ModuleRegistry.Error) {
        try registry.handle(.get, "pubsub", namespace: PubSub.namespace, for: .account) { [service] request, responder in
            responder.answer { try await Self.get(request, service) }
        }
        try registry.handle(.set, "pubsub", namespace: PubSub.namespace, for: .account, advertise: false) { [service] request, responder in
            responder.answer { try await Self.set(request, service) }
        }
        try registry.handle(.get, "pubsub", namespace: PubSub.owner, for: .account, advertise: false) { [service] request, responder in
            responder.answer { try await Self.ownerGet(request, service) }
        }
        try registry.handle(.set, "pubsub", namespace: PubSub.owner, for: .account, advertise: false) { [service] request, responder in
            responder.answer { try await Self.ownerSet(request, service) }
        }
        for feature in PubSub.features { registry.advertise(feature, for: .account) }
    }

    /// The one action element inside `<pubsub/>` (publish-options travels beside publish).
    static func action(of request: IQRequest) throws -> XMLElement {
        let actions = request.payload.elements.filter { $0.name != "publish-options" }
        guard actions.count == 1, let action = actions.first, action.namespace == request.payload.namespace else {
            throw StanzaError(.badRequest, text: "A pubsub request carries exactly one action element.")
        }
        return action
    }

    /// Node names and item ids are stored and echoed in every notification: bounded.
    static let maxNameBytes = 1023

    static func node(of action: XMLElement) throws -> String {
        guard let node = action[attribute: "node"], !node.isEmpty else { throw PubSub.nodeRequired() }
        guard node.utf8.count <= maxNameBytes else {
            throw StanzaError(.notAcceptable, text: "A node name may be at most \(maxNameBytes) bytes long.")
        }
        return node
    }

    static func reply(_ child: XMLElement, namespace: String = PubSub.namespace) -> XMLElement {
        XMLElement("pubsub", namespace: namespace, [:], [child])
    }

    // MARK: get

    private static func get(_ request: IQRequest, _ service: PEPService) async throws -> XMLElement? {
        let action = try action(of: request)
        switch action.name {
        case "items":
            let node = try node(of: action)
            let ids = action.children("item", namespace: PubSub.namespace).compactMap { $0[attribute: "id"] }
            var max: Int? = nil
            if let text = action[attribute: "max_items"] {
                guard let value = Int(text), value > 0 else {
                    throw StanzaError(.badRequest, text: "max_items must be a positive integer, not '\(text)'.")
                }
                max = value
            }
            let items = try await service.items(owner: request.to, node: node, requester: request.from, ids: ids.isEmpty ? nil : ids, max: max)
            var list = XMLElement("items", ["node": node])
            for item in items {
                var element = XMLElement("item", ["id": item.id])
                if let payload = StoredStanza.parse(item.payload) { element.append(payload) }
                list.append(element)
            }
            return reply(list)
        case "subscriptions":
            // PEP subscriptions are implicit (presence plus +notify): there is nothing to list.
            return reply(XMLElement("subscriptions", action[attribute: "node"].map { ["node": $0] } ?? [:]))
        case "affiliations":
            var list = XMLElement("affiliations")
            if request.isToOwnAccount, let username = request.from.localpart {
                for node in try await service.store.pepNodes(of: username) {
                    list.append(XMLElement("affiliation", ["node": node.name, "affiliation": "owner"]))
                }
            }
            return reply(list)
        case "options":
            throw PubSub.unsupported("subscription-options", "Subscription options")
        default:
            throw PubSub.unsupported(action.name, "<\(action.name)/>")
        }
    }

    // MARK: set

    private static func set(_ request: IQRequest, _ service: PEPService) async throws -> XMLElement? {
        let action = try action(of: request)
        switch action.name {
        case "publish":
            guard request.isToOwnAccount else { throw PubSub.ownerOnly("publish") }
            let node = try node(of: action)
            let elements = action.children("item", namespace: PubSub.namespace)
            guard !elements.isEmpty else { throw PubSub.error(.badRequest, "item-required", text: "A PEP publish carries an item.") }
            var items: [(id: String?, payload: XMLElement)] = []
            for element in elements {
                let payloads = element.elements
                guard payloads.count == 1, let payload = payloads.first else {
                    throw PubSub.error(.badRequest, "invalid-payload", text: "An item carries exactly one payload element.")
                }
                let id = element[attribute: "id"].flatMap { $0.isEmpty ? nil : $0 }
                guard (id?.utf8.count ?? 0) <= maxNameBytes else {
                    throw StanzaError(.notAcceptable, text: "An item id may be at most \(maxNameBytes) bytes long.")
                }
                items.append((id, payload))
            }
            guard items.count <= service.limits.maxItemsPerNode else {
                throw PubSub.error(.policyViolation, text: "At most \(service.limits.maxItemsPerNode) items may be published at once.")
            }
            var options: [(name: String, values: [String])]? = nil
            if let publishOptions = request.payload.firstChild("publish-options", namespace: PubSub.namespace),
                let form = PEPDataForm.first(in: publishOptions)
            {
                guard form.formType == PubSub.publishOptions else {
                    throw PubSub.error(.badRequest, "invalid-options", text: "publish-options need FORM_TYPE \(PubSub.publishOptions).")
                }
                options = form.fields
            }
            let ids = try await service.publish(owner: request.to, node: node, items: items, options: options)
            var publish = XMLElement("publish", ["node": node])
            for id in ids { publish.append(XMLElement("item", ["id": id])) }
            return reply(publish)
        case "retract":
            guard request.isToOwnAccount else { throw PubSub.ownerOnly("retract items") }
            let node = try node(of: action)
            let ids = action.children("item", namespace: PubSub.namespace).compactMap { $0[attribute: "id"] }
            guard ids.count == 1, let id = ids.first, !id.isEmpty else {
                throw PubSub.error(.badRequest, "item-required", text: "A retraction names one item id.")
            }
            let notify = action[attribute: "notify"] == "true" || action[attribute: "notify"] == "1"
            try await service.retract(owner: request.to, node: node, itemID: id, notify: notify)
            return nil
        case "create":
            guard request.isToOwnAccount, let username = request.to.localpart else { throw PubSub.ownerOnly("create nodes") }
            var configuration = PEPNodeConfiguration()
            if let configure = request.payload.firstChild("configure", namespace: PubSub.namespace), let form = PEPDataForm.first(in: configure) {
                configuration = try configuration.applying(form.fields, serverMaxItems: service.limits.maxItemsPerNode)
            }
            let given = action[attribute: "node"].flatMap { $0.isEmpty ? nil : $0 }
            let node = given ?? TimeOrderedUUID.make()
            let chosen = configuration
            try await service.serialized(request.to) { try await service.create(node, of: username, configuration: chosen) }
            // §8.1.2: an instant node's name comes back; a named one needs no payload.
            return given == nil ? reply(XMLElement("create", ["node": node])) : nil
        case "subscribe", "unsubscribe", "options":
            throw PubSub.unsupported(
                "subscribe", "Explicit subscription (PEP subscribes contacts by presence and +notify)")
        default:
            throw PubSub.unsupported(action.name, "<\(action.name)/>")
        }
    }
}
