import ParleyCore
import ParleyStorage

/// jabber:iq:roster (RFC 6121 §2) items as XML.
enum RosterXML {
    static let namespace = XMLNamespace.roster
    static let versioningFeature = XMLNamespace.rosterVersioning

    static func element(for item: RosterItem) -> XMLElement {
        var element = XMLElement("item", namespace: namespace)
        element.setAttribute("jid", item.contact)
        if let name = item.name, !name.isEmpty { element.setAttribute("name", name) }
        element.setAttribute("subscription", item.subscription.rawValue)
        if item.askSubscribe { element.setAttribute("ask", "subscribe") }
        if item.approved { element.setAttribute("approved", "true") }
        for group in item.groups { element.append(XMLElement("group", namespace: namespace, text: group)) }
        return element
    }

    static func removal(of contact: String) -> XMLElement {
        XMLElement("item", namespace: namespace, ["jid": contact, "subscription": "remove"])
    }

    static func query(version: Int64?, items: [XMLElement]) -> XMLElement {
        var query = XMLElement("query", namespace: namespace)
        if let version { query.setAttribute("ver", String(version)) }
        for item in items { query.append(item) }
        return query
    }
}

/// Roster pushes (RFC 6121 §2.1.6) to every resource of a user that asked for the roster.
struct RosterPusher: Sendable {
    let sessions: SessionRegistry

    func push(_ item: XMLElement, version: Int64, to user: JID) {
        let query = RosterXML.query(version: version, items: [item])
        for session in sessions.sessions(of: user) where session.withPresence({ $0.wantsRosterPushes }) {
            var push = XMLElement(
                "iq", namespace: XMLNamespace.client,
                ["to": session.jid.description, "type": "set", "id": "push-\(version)-\(UInt32.random(in: .min ... .max))"])
            push.append(query)
            session.deliver(push)
        }
    }
}
