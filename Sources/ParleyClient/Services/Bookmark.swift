import ParleyCore

/// A group chat the user keeps a bookmark of (XEP-0402, or XEP-0048 on older servers).
public struct Bookmark: Sendable, Equatable {
    /// The room's JID (XEP-0402 item id).
    public var jid: JID
    public var name: String?
    /// The nickname to join with.
    public var nick: String?
    /// Join it when the client starts.
    public var autojoin: Bool
    public var password: String?

    public init(jid: JID, name: String? = nil, nick: String? = nil, autojoin: Bool = false, password: String? = nil) {
        self.jid = jid
        self.name = name
        self.nick = nick
        self.autojoin = autojoin
        self.password = password
    }

    /// XEP-0402 §3: `<conference xmlns='urn:xmpp:bookmarks:1'/>`, the JID being the item id.
    init?(item: XMLElement) {
        let ns = ProfileNamespace.bookmarks
        guard let id = item[attribute: "id"], let jid = try? JID(id), let conference = item.firstChild("conference", namespace: ns) else { return nil }
        self.init(
            jid: jid, name: conference[attribute: "name"], nick: conference.firstChild("nick", namespace: ns)?.text,
            autojoin: Self.boolean(conference[attribute: "autojoin"]), password: conference.firstChild("password", namespace: ns)?.text)
    }

    var conference: XMLElement {
        let ns = ProfileNamespace.bookmarks
        var conference = XMLElement("conference", namespace: ns, ["autojoin": autojoin ? "true" : "false"])
        if let name { conference.setAttribute("name", name) }
        if let nick { conference.append(XMLElement("nick", namespace: ns, text: nick)) }
        if let password { conference.append(XMLElement("password", namespace: ns, text: password)) }
        return conference
    }

    /// XEP-0048 `<conference jid=…/>` inside `<storage xmlns='storage:bookmarks'/>`.
    init?(legacy conference: XMLElement) {
        let ns = ProfileNamespace.legacyBookmarks
        guard let address = conference[attribute: "jid"], let jid = try? JID(address) else { return nil }
        self.init(
            jid: jid, name: conference[attribute: "name"], nick: conference.firstChild("nick", namespace: ns)?.text,
            autojoin: Self.boolean(conference[attribute: "autojoin"]), password: conference.firstChild("password", namespace: ns)?.text)
    }

    var legacyConference: XMLElement {
        let ns = ProfileNamespace.legacyBookmarks
        var conference = XMLElement("conference", namespace: ns, ["jid": jid.description, "autojoin": autojoin ? "true" : "false"])
        if let name { conference.setAttribute("name", name) }
        if let nick { conference.append(XMLElement("nick", namespace: ns, text: nick)) }
        if let password { conference.append(XMLElement("password", namespace: ns, text: password)) }
        return conference
    }

    /// xs:boolean: "true" or "1".
    static func boolean(_ text: String?) -> Bool {
        text == "true" || text == "1"
    }
}
