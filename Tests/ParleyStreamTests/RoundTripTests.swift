import NIOCore
import NIOEmbedded
import ParleyCore
import ParleyStream
import Testing

/// What the encoder writes, the decoder reads back as the same elements.
@Suite struct RoundTripTests {
    static let client = XMLNamespace.client

    /// Schema-valid stanzas (the encoder tests validate a stream made of them).
    static let stanzas: [XMLElement] = [
        XMLElement(
            "message", namespace: client,
            attributes: [
                XMLAttribute("to", "romeo@example.net"), XMLAttribute("id", "m1"), XMLAttribute("type", "chat"),
                XMLAttribute("lang", "de", namespace: XMLNamespace.xml),
            ],
            children: [
                .element(XMLElement("body", text: "a < b && c > d; 'quoted' \"double\"")),
                .element(
                    XMLElement(
                        "body", namespace: nil,
                        attributes: [XMLAttribute("lang", "en", namespace: XMLNamespace.xml)],
                        children: [.text("line one\nline two\ttabbed\r\nCRLF")])),
            ]),
        XMLElement(
            "message", namespace: client, ["to": "日本@example.net", "id": "ü&'\"<>\t\n"],
            [XMLElement("body", text: "Grüße, 日本語, emoji 🎉🇫🇷, עברית, 𝄞")]),
        // XEP-0297 forwarding: jabber:client inside a foreign namespace inside jabber:client.
        XMLElement(
            "message", namespace: client, ["to": "juliet@example.com", "id": "fwd"],
            [
                XMLElement(
                    "forwarded", namespace: "urn:xmpp:forward:0", [:],
                    [
                        XMLElement("delay", namespace: "urn:xmpp:delay", ["stamp": "2024-01-01T00:00:00Z"], []),
                        XMLElement(
                            "message", namespace: client, ["from": "romeo@example.net", "type": "chat"],
                            [XMLElement("body", text: "nested")]),
                    ])
            ]),
        XMLElement(
            "iq", namespace: client, ["type": "error", "id": "e1"],
            [
                XMLElement("query", namespace: "jabber:iq:version", [:], []),
                XMLElement(
                    "error", namespace: client, ["type": "cancel"],
                    [
                        XMLElement("service-unavailable", namespace: XMLNamespace.stanzaErrors, [:], []),
                        XMLElement("text", namespace: XMLNamespace.stanzaErrors, text: "Nobody & nothing"),
                    ]),
            ]),
        XMLElement(
            "presence", namespace: client, [:],
            [
                XMLElement("show", text: "dnd"), XMLElement("status", text: "  spaces  kept  "),
                XMLElement("priority", text: "-1"),
                XMLElement("x", namespace: "jabber:x:data", ["type": "result"], [
                    XMLElement("field", ["var": "FORM_TYPE"], [XMLElement("value", text: "urn:x")]),
                ]),
            ]),
        XMLElement("presence", namespace: client, ["type": "unavailable"], []),
    ]

    /// Round-trip only: things the schemas rightly refuse but the wire format must survive.
    static let oddities: [XMLElement] = [
        // An attribute in a foreign namespace gets a generated prefix.
        XMLElement(
            "message", namespace: client,
            attributes: [XMLAttribute("hint", "x y", namespace: "urn:example:attributes")],
            children: [.element(XMLElement("body", text: "hinted"))]),
        // A stream-level element in the streams namespace, written with the stream prefix.
        EncoderTests.features,
        // A payload whose child goes back to the default namespace of the stream.
        XMLElement(
            "iq", namespace: client, ["type": "set", "id": "x"],
            [XMLElement("outer", namespace: "urn:example:outer", [:], [XMLElement("inner", namespace: client, text: "back")])]),
    ]

    @Test func encodedStreamDecodesToTheSameElements() throws {
        let elements = Self.stanzas + Self.oddities
        let encoder = EmbeddedChannel()
        try encoder.pipeline.syncOperations.addHandler(XMLStreamEncoder())
        let opening = StreamOpening(from: "example.com", to: "juliet@example.com", id: "rt1", language: "de")
        try encoder.writeOutbound(XMLStreamOutput.open(opening))
        for element in elements {
            try encoder.writeOutbound(XMLStreamOutput.element(element))
            try encoder.writeOutbound(XMLStreamOutput.whitespace)
        }
        try encoder.writeOutbound(XMLStreamOutput.close)

        let (decoder, probe) = try EmbeddedChannel.decoding()
        while let buffer = try encoder.readOutbound(as: ByteBuffer.self) {
            // One byte per read too: multi-byte characters split across reads.
            var buffer = buffer
            while let byte = buffer.readInteger(as: UInt8.self) {
                try decoder.writeInbound(ByteBuffer(bytes: [byte]))
            }
        }
        let events = try decoder.drainEvents()
        #expect(probe.errors.isEmpty)
        try #require(events.count == elements.count + 2)

        let header = try #require(events.first?.header)
        #expect(header.defaultNamespace == XMLNamespace.client)
        #expect(header.namespaceDeclarations["stream"] == XMLNamespace.streams)
        #expect(header[attribute: "from"] == "example.com")
        #expect(header[attribute: "to"] == "juliet@example.com")
        #expect(header[attribute: "id"] == "rt1")
        #expect(header[attribute: "version"] == "1.0")
        #expect(header.attributes.contains(XMLAttribute("lang", "de", namespace: XMLNamespace.xml)))

        for (index, element) in elements.enumerated() {
            #expect(events[index + 1].element == element, "element \(index): \(element)")
        }
        #expect(events.last == .streamClosed)
    }

    /// The builder leaves namespaces implicit; the parser resolves them. Both compare equal.
    @Test func builtNamespacesAreResolvedLikeParsedOnes() throws {
        let message = Self.stanzas[2]
        let forwarded = try #require(message.firstChild("forwarded", namespace: "urn:xmpp:forward:0"))
        #expect(forwarded.firstChild("message", namespace: XMLNamespace.client)?.firstChild("body")?.namespace == XMLNamespace.client)
        #expect(message.firstChild("forwarded")?.firstChild("delay")?.namespace == "urn:xmpp:delay")
    }
}
