import ParleyCore

/// One available device of a contact, as its presence describes it.
public struct OnlineResource: Sendable, Equatable {
    public var jid: JID
    public var presence: PresenceUpdate
    /// The XEP-0115 node its client announces (names the software), if any.
    public var capsNode: String?
}

extension ChatClient {
    /// The contact's devices that are online now, by full JID.
    public func resources(of jid: JID) -> [OnlineResource] {
        (onlineResources[jid.bare] ?? [:]).values.sorted { $0.jid < $1.jid }
    }

    func trackResource(_ stanza: XMLElement, _ update: PresenceUpdate) {
        guard let resource = update.from.resourcepart else { return }
        let bare = update.from.bare
        if update.show == .unavailable {
            onlineResources[bare]?[resource] = nil
            if onlineResources[bare]?.isEmpty == true { onlineResources[bare] = nil }
            return
        }
        // Bounded: a contact with hundreds of resources is not one we need to list.
        guard onlineResources[bare]?[resource] != nil || (onlineResources[bare]?.count ?? 0) < 50 else { return }
        let caps = stanza.firstChild("c", namespace: ProfileNamespace.caps)?[attribute: "node"]
        onlineResources[bare, default: [:]][resource] = OnlineResource(jid: update.from, presence: update, capsNode: caps)
    }

    /// XEP-0092: the software a device runs (to a full JID). nil fields when it does not say.
    public func softwareVersion(of jid: JID, timeout: Duration = .seconds(5)) async throws -> (name: String?, version: String?, os: String?) {
        var iq = XMLElement("iq", namespace: XMLNamespace.client, ["type": "get", "to": jid.description])
        iq.append(XMLElement("query", namespace: XMLNamespace.version))
        let answer: XMLElement
        do {
            answer = try await xmpp.request(iq, timeout: timeout)
        } catch let error as StanzaError {
            throw ProfileError.refused(error)
        }
        let query = answer.firstChild("query", namespace: XMLNamespace.version)
        func field(_ name: String) -> String? {
            query?.firstChild(name, namespace: XMLNamespace.version).flatMap { DisplayName.printable($0.text) }
        }
        return (field("name"), field("version"), field("os"))
    }
}
