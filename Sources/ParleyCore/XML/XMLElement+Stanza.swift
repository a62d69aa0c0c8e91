/// Accessors shared by the three stanza kinds, so routing code reads as the RFC does.
extension XMLElement {
    public var isStanza: Bool {
        (name == "message" || name == "presence" || name == "iq")
            && (namespace == XMLNamespace.client || namespace == XMLNamespace.server)
    }

    public var to: String? {
        get { self[attribute: "to"] }
        set { self[attribute: "to"] = newValue }
    }

    public var from: String? {
        get { self[attribute: "from"] }
        set { self[attribute: "from"] = newValue }
    }

    public var id: String? {
        get { self[attribute: "id"] }
        set { self[attribute: "id"] = newValue }
    }

    public var type: String? {
        get { self[attribute: "type"] }
        set { self[attribute: "type"] = newValue }
    }
}
