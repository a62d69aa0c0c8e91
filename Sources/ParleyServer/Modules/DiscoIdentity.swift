import ParleyCore

/// An XEP-0030 identity beyond the one DiscoModule gives each target.
public struct DiscoIdentity: Sendable, Hashable {
    public var category: String
    public var type: String
    public var name: String?
    public var lang: String?

    public init(category: String, type: String, name: String? = nil, lang: String? = nil) {
        self.category = category
        self.type = type
        self.name = name
        self.lang = lang
    }

    var element: XMLElement {
        var identity = XMLElement("identity", ["category": category, "type": type])
        if let lang { identity.setAttribute("lang", lang, namespace: XMLNamespace.xml) }
        if let name { identity[attribute: "name"] = name }
        return identity
    }
}
