import ParleyCore
import Testing

/// A parsed stanza (a view into its arena) must read, compare, hash and serialize exactly
/// like the same element built in code from what it reads. Inputs found by the fuzzer.
@Suite struct XMLArenaEquivalenceTests {
    static let header =
        "<?xml version='1.0'?><stream:stream to='example.com' version='1.0' xml:lang='en' "
        + "xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>"

    func stanzas(_ body: String) throws -> [XMLElement] {
        let parser = XMLStreamParser()
        var result: [XMLElement] = []
        try Array((Self.header + body).utf8).withUnsafeBytes { bytes in
            _ = try parser.feed(bytes) { event in
                if case .stanza(let element) = event { result.append(element) }
                return .continue
            }
        }
        return result
    }

    @Test(arguments: [
        "<presence><show>chat</show><c xmlns=''/>p://jabber.org/protocol/caps' hash='sha-1'</presence>",
        "<foo:x xmlns:foo='urn:f' foo:a='1'/>",
        "<message to='a@b' id='1'><body>hi &amp; bye</body><x xmlns='urn:x' a='&amp;'><y/>text<z/></x></message>",
    ])
    func aParsedStanzaIsItsBuiltCopy(_ body: String) throws {
        let parsed = try stanzas(body)
        #expect(!parsed.isEmpty)
        for element in parsed {
            // The namespace is set afterwards: the initializer would hand it down to children in
            // no namespace (its nil means "inherit" there).
            var copy = XMLElement(element.name, attributes: element.attributes, children: element.children)
            copy.namespace = element.namespace
            #expect(copy == element)
            #expect(element == copy)
            #expect(copy.hashValue == element.hashValue)
            #expect(copy.xmlString() == element.xmlString())
            #expect(copy.text == element.text)
            #expect(copy.elements == element.elements)
            for attribute in element.attributes {
                #expect(element.attribute(attribute.name, namespace: attribute.namespace) == attribute.value)
            }
        }
    }
}
