import ParleyCore

/// The few XEP-0060 operations the profile features need on our own PEP service (XEP-0163):
/// publish with publish-options, fetch items, retract. Each throws `ProfileError.refused`
/// with the server's stanza error.
struct PubSub {
    let xmpp: XMPPClient

    /// Publishes `payload` as item `itemID` of `node`, asking for `options` (XEP-0060 §7.1.5).
    /// A node that exists with other settings answers `precondition-not-met`: it is then
    /// reconfigured to `options` (as Conversations does) and published again, once.
    func publish(node: String, itemID: String?, payload: XMLElement, options: [String: String]) async throws {
        do {
            try await publishOnce(node: node, itemID: itemID, payload: payload, options: options)
        } catch ProfileError.refused(let error) where Self.isPreconditionNotMet(error) && !options.isEmpty {
            try await configure(node: node, options: options)
            try await publishOnce(node: node, itemID: itemID, payload: payload, options: options)
        }
    }

    private func publishOnce(node: String, itemID: String?, payload: XMLElement, options: [String: String]) async throws {
        var item = XMLElement("item", namespace: ProfileNamespace.pubsub)
        if let itemID { item.setAttribute("id", itemID) }
        item.append(payload)
        var pubsub = XMLElement("pubsub", namespace: ProfileNamespace.pubsub)
        pubsub.append(XMLElement("publish", namespace: ProfileNamespace.pubsub, ["node": node], [item]))
        if !options.isEmpty {
            pubsub.append(XMLElement("publish-options", namespace: ProfileNamespace.pubsub, [:], [Self.form(ProfileNamespace.publishOptions, options)]))
        }
        _ = try await request(type: "set", to: nil, pubsub)
    }

    /// XEP-0060 §8.2.4: the owner submits the node configuration form.
    func configure(node: String, options: [String: String]) async throws {
        let configure = XMLElement("configure", namespace: ProfileNamespace.pubsubOwner, ["node": node], [Self.form(ProfileNamespace.nodeConfig, options)])
        _ = try await request(type: "set", to: nil, XMLElement("pubsub", namespace: ProfileNamespace.pubsubOwner, [:], [configure]))
    }

    /// The items of `node` at `service` (a contact's bare JID, or nil for our own), or only
    /// `itemID`. A node that does not exist has no items.
    func items(node: String, at service: JID?, itemID: String? = nil) async throws -> [XMLElement] {
        var items = XMLElement("items", namespace: ProfileNamespace.pubsub, ["node": node])
        if let itemID { items.append(XMLElement("item", namespace: ProfileNamespace.pubsub, ["id": itemID])) }
        let answer: XMLElement
        do {
            answer = try await request(type: "get", to: service, XMLElement("pubsub", namespace: ProfileNamespace.pubsub, [:], [items]))
        } catch ProfileError.refused(let error) where error.condition == .itemNotFound {
            return []
        }
        return answer.firstChild("pubsub", namespace: ProfileNamespace.pubsub)?.firstChild("items", namespace: ProfileNamespace.pubsub)?
            .children("item", namespace: ProfileNamespace.pubsub) ?? []
    }

    func retract(node: String, itemID: String) async throws {
        let retract = XMLElement(
            "retract", namespace: ProfileNamespace.pubsub, ["node": node, "notify": "true"],
            [XMLElement("item", namespace: ProfileNamespace.pubsub, ["id": itemID])])
        _ = try await request(type: "set", to: nil, XMLElement("pubsub", namespace: ProfileNamespace.pubsub, [:], [retract]))
    }

    /// An iq to `to` (nil: our own account); stanza errors become `ProfileError.refused`.
    func request(type: String, to: JID?, _ payload: XMLElement) async throws -> XMLElement {
        var iq = XMLElement("iq", namespace: XMLNamespace.client, ["type": type], [payload])
        if let to { iq.to = to.description }
        do {
            return try await xmpp.request(iq)
        } catch let error as StanzaError {
            throw ProfileError.refused(error)
        }
    }

    /// A submitted data form (XEP-0004) with its FORM_TYPE.
    static func form(_ formType: String, _ fields: [String: String]) -> XMLElement {
        var form = XMLElement("x", namespace: XMLNamespace.dataForms, ["type": "submit"])
        form.append(XMLElement("field", namespace: XMLNamespace.dataForms, ["var": "FORM_TYPE", "type": "hidden"], [XMLElement("value", namespace: XMLNamespace.dataForms, text: formType)]))
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
            form.append(XMLElement("field", namespace: XMLNamespace.dataForms, ["var": name], [XMLElement("value", namespace: XMLNamespace.dataForms, text: value)]))
        }
        return form
    }

    static func isPreconditionNotMet(_ error: StanzaError) -> Bool {
        error.applicationCondition?.name == "precondition-not-met"
    }
}
