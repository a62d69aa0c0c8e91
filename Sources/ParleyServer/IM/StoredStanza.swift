import ParleyCore

/// Stanzas kept in storage (pending subscription requests, offline messages) as XML text in
/// the `jabber:client` namespace, and read back with the same parser as the network.
enum StoredStanza {
    static func serialize(_ stanza: XMLElement) -> String {
        var element = stanza
        if element.namespace == nil { element.namespace = XMLNamespace.client }
        return element.xmlString()
    }

    static func parse(_ text: String) -> XMLElement? {
        let parser = XMLStreamParser()
        let header = "<stream:stream xmlns='jabber:client' xmlns:stream='\(XMLNamespace.streams)'>"
        guard let events = try? parser.feed(Array((header + text).utf8)) else { return nil }
        for case .stanza(let element) in events { return element }
        return nil
    }
}
