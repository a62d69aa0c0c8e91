import ParleyCore

/// Elements a client asked the server to keep (a vCard, private XML) as XML text in their
/// own namespace, read back with the network's parser (so the same limits and refusals
/// apply to what comes out of the database as to what came off the wire).
enum ProfileXML {
    static func serialize(_ element: XMLElement) -> String {
        element.xmlString()
    }

    /// The serialized size, which is what the size limits count.
    static func byteCount(_ element: XMLElement) -> Int {
        element.xmlBytes().count
    }

    /// nil if the text is not one well-formed element.
    static func parse(_ text: String) -> XMLElement? {
        let bytes = Array((header + text).utf8)
        // Whatever limit the stanza had when it came in, the stored element fits again.
        let parser = XMLStreamParser(limits: .init(maxStanzaBytes: max(bytes.count + 1, 262_144)))
        guard let events = try? parser.feed(bytes) else { return nil }
        for case .stanza(let element) in events { return element }
        return nil
    }

    private static let header = "<stream:stream xmlns='jabber:client' xmlns:stream='\(XMLNamespace.streams)'>"

    /// Whether the element carries nothing: no attributes, no child elements, no text but
    /// whitespace (what a client sends to clear what it stored).
    static func isEmpty(_ element: XMLElement) -> Bool {
        element.attributes.isEmpty && element.elements.isEmpty && element.text.allSatisfy(\.isWhitespace)
    }
}
