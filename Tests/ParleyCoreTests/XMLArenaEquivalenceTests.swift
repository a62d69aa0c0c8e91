import ParleyCore
import Testing

/// A parsed stanza (a view into its arena) must read, compare, hash and serialize exactly
/// like the same element built in code from what it reads. Inputs found by the fuzzer.
@Suite struct XMLArenaEquivalenceTests {
    static let header =
        "<?xml version='1.0'?><stream:stream to='example.com' version='1.0' xml:lang='en' "
        + "xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>"

    func stanzas(_ body: String, header: String = XMLArenaEquivalenceTests.header) throws -> [XMLElement] {
        let parser = XMLStreamParser()
        var result: [XMLElement] = []
        try Array((header + body).utf8).withUnsafeBytes { bytes in
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

extension XMLArenaEquivalenceTests {
    /// `to`, `from`, `id` and `type` are found by their number in the parser's name table:
    /// only attributes in no namespace count, a name first met as an element name still
    /// works, and a name the stream never used is simply absent.
    @Test func stanzaAttributesReadLikeAnyOtherAttribute() throws {
        let parsed = try stanzas(
            "<iq id='1'><type xmlns='urn:t'/></iq>"
                + "<message xmlns:x='urn:x' x:type='namespaced' x:to='elsewhere' type='chat' id='m2' from='a@b/c'/>"
                + "<presence x='1'/>")
        #expect(parsed.count == 3)
        #expect(parsed[0].id == "1" && parsed[0].type == nil && parsed[0].to == nil)
        #expect(parsed[1].type == "chat" && parsed[1].to == nil && parsed[1].id == "m2" && parsed[1].from == "a@b/c")
        #expect(parsed[1].attribute("type", namespace: "urn:x") == "namespaced")
        #expect(parsed[2].type == nil && parsed[2].id == nil && parsed[2].from == nil)
        for element in parsed {
            let byNumber = [element.to, element.from, element.id, element.type]
            #expect(byNumber == ["to", "from", "id", "type"].map { element.attribute($0) }, "\(element.xmlString())")
        }
    }

    @Test func cdataAndMarkupInTextSerializeEscaped() throws {
        let parsed = try stanzas("<message><body><![CDATA[<not a tag> & raw]]> more</body></message>")
        let element = try #require(parsed.first)
        var copy = XMLElement(element.name, attributes: element.attributes, children: element.children)
        copy.namespace = element.namespace
        #expect(copy.xmlString() == element.xmlString())
        #expect(element.xmlString().contains("&lt;not a tag&gt; &amp; raw more"))
    }
}

extension XMLArenaEquivalenceTests {
    @Test func stanzasInNoNamespace() throws {
        let header = "<?xml version='1.0'?><stream:stream xmlns:stream='http://etherx.jabber.org/streams' version='1.0'>"
        let parsed = try stanzas("<messag/><body><![CDATA[<x>]]> y</body><iq a='1'><q xmlns='urn:q'><i n='2'>t</i></q></iq>", header: header)
        for element in parsed {
            var copy = XMLElement(element.name, attributes: element.attributes, children: element.children)
            copy.namespace = element.namespace
            #expect(copy.xmlString() == element.xmlString())
        }
    }
}

extension XMLArenaEquivalenceTests {
    /// libxml2 passes an overlong three-byte form inside CDATA; the parser must not (the fuzzer
    /// found it: forwarded as it was, it would end the recipient's stream), and in text and
    /// attribute values too.
    @Test(arguments: [
        [0xE0, 0x98, 0x95],  // overlong
        [0xED, 0xA0, 0x80],  // a UTF-16 surrogate
        [0xF4, 0x90, 0x80, 0x80],  // above U+10FFFF
        [0xC0, 0xAF],  // overlong two-byte
    ] as [[UInt8]])
    func illFormedUTF8IsAStreamErrorWhereverItIs(_ sequence: [UInt8]) throws {
        // In CDATA, in character data and in an attribute value.
        let places: [([UInt8], [UInt8])] = [
            (Array("<message><body><![CDATA[caff".utf8), Array("]]></body></message>".utf8)),
            (Array("<message><body>caff".utf8), Array("</body></message>".utf8)),
            (Array("<message id='caff".utf8), Array("'/>".utf8)),
        ]
        for (before, after) in places {
            let parser = XMLStreamParser()
            let bytes = Array(Self.header.utf8) + before + sequence + after
            var stanzas = 0
            #expect(throws: StreamError.self, "\(String(decoding: before, as: UTF8.self))") {
                try bytes.withUnsafeBytes { raw in
                    _ = try parser.feed(raw) { event in
                        if case .stanza = event { stanzas += 1 }
                        return .continue
                    }
                }
            }
            #expect(stanzas == 0)
        }
    }

    @Test func wellFormedUTF8IsAccepted() throws {
        let text = "caffè ࠕ 😀 ÿ 中文 𐍈"
        let parsed = try stanzas("<message a='\(text)'><body><![CDATA[\(text)]]>\(text)</body></message>")
        let message = try #require(parsed.first)
        #expect(message[attribute: "a"] == text)
        #expect(message.firstChild("body")?.text == text + text)
    }
}
