import ParleyCore

/// One conference bookmark as both XEP-0048 (`<conference jid=…/>` in
/// `storage:bookmarks`) and XEP-0402 (`<conference/>` in `urn:xmpp:bookmarks:1`, the room's
/// JID as the item id) carry it: the fields they share, compared after normalising
/// (`autojoin='1'` is `true`, blank text is none), so that a bookmark converted both ways
/// is equal to itself.
struct Bookmark: Hashable, Sendable {
    var jid: String
    var name: String?
    var autojoin = false
    var nick: String?
    var password: String?
    /// Elements of other namespaces a client keeps with the bookmark (XEP-0402's
    /// `<extensions/>`; XEP-0048 allows them inside `<conference/>`).
    var extensions: [XMLElement] = []

    static let namespace = BookmarksConversion.node
    static let legacyNamespace = BookmarksConversion.legacyNamespace

    /// From an XEP-0402 item: nil when the payload is not a conference.
    init?(jid: String, pep conference: XMLElement) {
        guard conference.name == "conference", conference.namespace == Self.namespace, let room = try? JID(jid), !room.isFull
        else { return nil }
        self.jid = room.description
        name = Self.nonBlank(conference[attribute: "name"])
        autojoin = Self.isTrue(conference[attribute: "autojoin"])
        nick = Self.nonBlank(conference.firstChild("nick", namespace: Self.namespace)?.text)
        password = Self.nonBlank(conference.firstChild("password", namespace: Self.namespace)?.text)
        extensions = conference.firstChild("extensions", namespace: Self.namespace)?.elements ?? []
    }

    /// From an XEP-0048 `<conference/>`: nil without a room JID that is one (it becomes an
    /// item id, and XEP-0402 clients join what it names).
    init?(legacy conference: XMLElement) {
        guard conference.name == "conference", conference.namespace == Self.legacyNamespace,
            let text = Self.nonBlank(conference[attribute: "jid"]), let room = try? JID(text), !room.isFull
        else { return nil }
        self.jid = room.description
        name = Self.nonBlank(conference[attribute: "name"])
        autojoin = Self.isTrue(conference[attribute: "autojoin"])
        nick = Self.nonBlank(conference.firstChild("nick", namespace: Self.legacyNamespace)?.text)
        password = Self.nonBlank(conference.firstChild("password", namespace: Self.legacyNamespace)?.text)
        extensions = conference.elements.filter { $0.namespace != Self.legacyNamespace }
    }

    /// The conferences of a `<storage xmlns='storage:bookmarks'/>`, in order, a room named
    /// twice counting once (the last).
    static func list(inLegacy storage: XMLElement) -> [Bookmark] {
        var seen = Set<String>()
        let all = storage.children("conference", namespace: legacyNamespace).compactMap(Bookmark.init(legacy:))
        return Array(all.reversed().filter { seen.insert($0.jid).inserted }.reversed())
    }

    var pepElement: XMLElement {
        var conference = XMLElement("conference", namespace: Self.namespace)
        if let name { conference.setAttribute("name", name) }
        if autojoin { conference.setAttribute("autojoin", "true") }
        if let nick { conference.append(XMLElement("nick", text: nick)) }
        if let password { conference.append(XMLElement("password", text: password)) }
        if !extensions.isEmpty { conference.append(XMLElement("extensions", namespace: Self.namespace, [:], extensions)) }
        return conference
    }

    var legacyElement: XMLElement {
        var conference = XMLElement("conference", namespace: Self.legacyNamespace, ["jid": jid])
        if let name { conference.setAttribute("name", name) }
        if autojoin { conference.setAttribute("autojoin", "true") }
        if let nick { conference.append(XMLElement("nick", text: nick)) }
        if let password { conference.append(XMLElement("password", text: password)) }
        for element in extensions { conference.append(element) }
        return conference
    }

    private static func isTrue(_ value: String?) -> Bool {
        value == "true" || value == "1"
    }

    private static func nonBlank(_ text: String?) -> String? {
        guard let text, !text.allSatisfy(\.isWhitespace) else { return nil }
        return text
    }
}
