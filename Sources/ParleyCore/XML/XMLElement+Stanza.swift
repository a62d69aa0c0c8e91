/// Accessors shared by the three stanza kinds, so routing code reads as the RFC does.
extension XMLElement {
    public var isStanza: Bool {
        (name == "message" || name == "presence" || name == "iq")
            && (namespace == XMLNamespace.client || namespace == XMLNamespace.server)
    }

    public var to: String? {
        get { stanzaAttribute(.to) }
        set { self[attribute: "to"] = newValue }
    }

    public var from: String? {
        get { stanzaAttribute(.from) }
        set { self[attribute: "from"] = newValue }
    }

    public var id: String? {
        get { stanzaAttribute(.id) }
        set { self[attribute: "id"] = newValue }
    }

    public var type: String? {
        get { stanzaAttribute(.type) }
        set { self[attribute: "type"] = newValue }
    }

    /// A parsed stanza finds these by the name's number in its parser's name table.
    @inline(__always)
    private func stanzaAttribute(_ name: XMLArena.StanzaAttributeNames.Name) -> String? {
        if case .arena(let arena, let node) = content { return arena.stanzaAttributeValue(of: node, name) }
        return attribute(name.rawValue)
    }
}
