import ParleyCore
import ParleyStorage

/// A node's configuration as the `pubsub#node_config` data form (XEP-0060 §8.2), both ways:
/// the form the owner gets to edit, and a submitted form (or publish-options, §7.1.5)
/// applied to a configuration.
extension PEPNodeConfiguration {
    /// The form the owner edits (§8.2.1), showing the current values (`max` for no limit
    /// below the server's).
    func form(type: String = "form") -> XMLElement {
        var form = PEPDataForm.Builder(type: type, formType: PubSub.nodeConfig)
        form.add("pubsub#title", type: "text-single", label: "A friendly name for the node", values: title.map { [$0] } ?? [])
        form.add(
            "pubsub#description", type: "text-single", label: "A description of the node", values: nodeDescription.map { [$0] } ?? [])
        form.add("pubsub#type", type: "text-single", label: "The type of node data", values: payloadType.map { [$0] } ?? [])
        form.add("pubsub#max_items", type: "text-single", label: "Max # of items to persist", values: [maxItems.map(String.init) ?? "max"])
        form.add("pubsub#persist_items", type: "boolean", label: "Persist items to storage", values: [persistItems ? "1" : "0"])
        form.add(
            "pubsub#access_model", type: "list-single", label: "Who may subscribe and retrieve items",
            values: [accessModel.rawValue], options: AccessModel.allCases.map(\.rawValue))
        form.add(
            "pubsub#roster_groups_allowed", type: "list-multi", label: "Roster groups allowed to subscribe",
            values: rosterGroupsAllowed)
        form.add(
            "pubsub#send_last_published_item", type: "list-single", label: "When to send the last published item",
            values: [sendLastPublishedItem.rawValue], options: SendLastPublishedItem.allCases.map(\.rawValue))
        form.add(
            "pubsub#deliver_notifications", type: "boolean", label: "Whether to deliver event notifications",
            values: [deliverNotifications ? "1" : "0"])
        form.add(
            "pubsub#deliver_payloads", type: "boolean", label: "Whether to deliver payloads with event notifications",
            values: [deliverPayloads ? "1" : "0"])
        form.add(
            "pubsub#notify_retract", type: "boolean", label: "Notify subscribers when items are removed from the node",
            values: [notifyRetract ? "1" : "0"])
        form.add(
            "pubsub#notify_delete", type: "boolean", label: "Notify subscribers when the node is deleted",
            values: [notifyDelete ? "1" : "0"])
        return form.element
    }

    /// This configuration with the submitted fields set. Fields this server does not know
    /// are ignored (XEP-0004 forms may carry more); a known field with a value it cannot
    /// take is refused with `not-acceptable` naming the field. `serverMaxItems` bounds
    /// `pubsub#max_items` (Prosody refuses more the same way).
    func applying(_ fields: [(name: String, values: [String])], serverMaxItems: Int) throws(StanzaError) -> PEPNodeConfiguration {
        var result = self
        for (name, values) in fields {
            let value = values.first ?? ""
            func refuse(_ why: String) -> StanzaError {
                PubSub.error(.notAcceptable, text: "\(name): \(why).")
            }
            func bool() throws(StanzaError) -> Bool {
                switch value {
                case "1", "true": return true
                case "0", "false": return false
                default: throw refuse("'\(value)' is not a boolean")
                }
            }
            switch name {
            case "pubsub#title": result.title = value.isEmpty ? nil : value
            case "pubsub#description": result.nodeDescription = value.isEmpty ? nil : value
            case "pubsub#type": result.payloadType = value.isEmpty ? nil : value
            case "pubsub#max_items":
                if value == "max" {
                    result.maxItems = nil
                } else if let count = Int(value), count >= 1 {
                    guard count <= serverMaxItems else {
                        throw PubSub.error(
                            .notAcceptable, text: "pubsub#max_items: this server keeps at most \(serverMaxItems) items per node.")
                    }
                    result.maxItems = count
                } else {
                    throw refuse("'\(value)' is neither a positive integer nor 'max'")
                }
            case "pubsub#persist_items": result.persistItems = try bool()
            case "pubsub#access_model":
                guard let model = AccessModel(rawValue: value) else {
                    throw refuse("'\(value)' is not an access model of this service (open, presence, roster, whitelist)")
                }
                result.accessModel = model
            case "pubsub#roster_groups_allowed": result.rosterGroupsAllowed = values
            case "pubsub#send_last_published_item":
                guard let when = SendLastPublishedItem(rawValue: value) else {
                    throw refuse("'\(value)' is not one of never, on_sub, on_sub_and_presence")
                }
                result.sendLastPublishedItem = when
            case "pubsub#deliver_notifications": result.deliverNotifications = try bool()
            case "pubsub#deliver_payloads": result.deliverPayloads = try bool()
            case "pubsub#notify_retract": result.notifyRetract = try bool()
            case "pubsub#notify_delete": result.notifyDelete = try bool()
            default: continue
            }
        }
        return result
    }

    /// §7.1.5: the first publish-options field the configuration does not already have, or
    /// nil when it meets them all. Compared by applying each field, so `1` and `true`, or
    /// `max` and no limit, are the same value.
    func firstUnmet(_ fields: [(name: String, values: [String])], serverMaxItems: Int) -> String? {
        for field in fields {
            guard let changed = try? applying([field], serverMaxItems: serverMaxItems) else { return field.name }
            if changed != self { return field.name }
        }
        return nil
    }

    /// Items kept, with `max` as the server's maximum.
    func itemsKept(serverMaxItems: Int) -> Int {
        persistItems ? min(maxItems ?? serverMaxItems, serverMaxItems) : 0
    }
}
