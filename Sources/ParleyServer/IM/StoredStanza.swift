import ParleyCore

/// Stanzas kept in storage (pending subscription requests, offline messages) as XML text in
/// the `jabber:client` namespace, and read back with the same parser as the network.
public enum StoredStanza {
    public static func serialize(_ stanza: XMLElement) -> String {
        // Serialized once for a client stream (a message on its way to its recipient), the
        // stanza lacks only its namespace declaration, which goes in after its name.
        if stanza.namespace == nil || stanza.namespace == XMLNamespace.client,
            let bytes = stanza.serializedBytes(in: .clientStream)
        {
            let afterName = 1 + stanza.name.utf8.count
            if bytes.count > afterName, bytes[0] == UInt8(ascii: "<"), bytes[1..<afterName].elementsEqual(stanza.name.utf8),
                bytes[afterName] == UInt8(ascii: " ") || bytes[afterName] == UInt8(ascii: ">") || bytes[afterName] == UInt8(ascii: "/")
            {
                var text: [UInt8] = []
                text.reserveCapacity(bytes.count + namespaceDeclaration.count)
                text.append(contentsOf: bytes[..<afterName])
                text.append(contentsOf: namespaceDeclaration)
                text.append(contentsOf: bytes[afterName...])
                return String(decoding: text, as: UTF8.self)
            }
        }
        var element = stanza
        if element.namespace == nil { element.namespace = XMLNamespace.client }
        return element.xmlString()
    }

    /// Parses many stored stanzas with one parser (one libxml2 context instead of one each);
    /// an unreadable one is nil and the parser starts afresh after it.
    public static func parseAll(_ texts: [String]) -> [XMLElement?] {
        var results: [XMLElement?] = []
        results.reserveCapacity(texts.count)
        var parser: XMLStreamParser? = nil
        for text in texts {
            if parser == nil {
                let fresh = XMLStreamParser()
                guard (try? fresh.feed(Array(header.utf8))) != nil else { return results + Array(repeating: nil, count: texts.count - results.count) }
                parser = fresh
            }
            var stanza: XMLElement? = nil
            if let events = try? parser?.feed(Array(text.utf8)) {
                for case .stanza(let element) in events { stanza = element }
            }
            // Nothing complete came out: the text was damaged, and the parser may be mid-element.
            if stanza == nil { parser = nil }
            results.append(stanza)
        }
        return results
    }

    private static let namespaceDeclaration = Array(" xmlns='\(XMLNamespace.client)'".utf8)

    private static let header = "<stream:stream xmlns='jabber:client' xmlns:stream='\(XMLNamespace.streams)'>"

    public static func parse(_ text: String) -> XMLElement? {
        let parser = XMLStreamParser()
        guard let events = try? parser.feed(Array((header + text).utf8)) else { return nil }
        for case .stanza(let element) in events { return element }
        return nil
    }
}
