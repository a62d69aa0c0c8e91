import NIOCore
import NIOEmbedded
import ParleyCore
import ParleyStream
import ParleyTestSupport
import Testing

/// What `XMLStreamEncoder` writes for each `XMLStreamOutput`, byte for byte.
@Suite struct EncoderTests {
    static let streamAttributes =
        "xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'"

    /// A channel with only the encoder; `write` returns the bytes one output produced.
    struct Encoder {
        let channel: EmbeddedChannel

        init(fallbackOpening: StreamOpening = StreamOpening()) throws {
            channel = EmbeddedChannel()
            try channel.pipeline.syncOperations.addHandler(XMLStreamEncoder(fallbackOpening: fallbackOpening))
        }

        func write(_ output: XMLStreamOutput) throws -> String {
            try channel.writeOutbound(output)
            let buffer = try #require(try channel.readOutbound(as: ByteBuffer.self))
            #expect(try channel.readOutbound(as: ByteBuffer.self) == nil, "one buffer per output")
            return String(buffer: buffer)
        }
    }

    static let serverOpening = StreamOpening(from: "example.com", id: "s4e8a2", version: "1.0", language: "en")

    static let features = XMLElement(
        "features", namespace: XMLNamespace.streams,
        attributes: [],
        children: [
            .element(XMLElement("starttls", namespace: XMLNamespace.tls, [:], [XMLElement("required")])),
            .element(
                XMLElement(
                    "mechanisms", namespace: XMLNamespace.sasl, [:],
                    [XMLElement("mechanism", text: "SCRAM-SHA-256"), XMLElement("mechanism", text: "PLAIN")])),
        ])

    @Test func openWritesTheDeclarationAndTheStreamHeader() throws {
        let encoder = try Encoder()
        #expect(
            try encoder.write(.open(Self.serverOpening))
                == "<?xml version='1.0'?><stream:stream \(Self.streamAttributes) from='example.com' id='s4e8a2' version='1.0' xml:lang='en'>"
        )
    }

    @Test func openWithEveryAttributeEscaped() throws {
        let encoder = try Encoder()
        let opening = StreamOpening(
            from: "juliet@example.com", to: "a'b&c", id: nil, version: nil, language: nil)
        #expect(
            try encoder.write(.open(opening))
                == "<?xml version='1.0'?><stream:stream \(Self.streamAttributes) from='juliet@example.com' to='a&apos;b&amp;c'>"
        )
    }

    @Test func openForAServerToServerStream() throws {
        let encoder = try Encoder()
        let text = try encoder.write(.open(StreamOpening(from: "a.example", to: "b.example", contentNamespace: XMLNamespace.server)))
        #expect(text.hasPrefix("<?xml version='1.0'?><stream:stream xmlns='jabber:server' xmlns:stream='http://etherx.jabber.org/streams' "))
        // A jabber:server stanza then needs no declaration either.
        let message = XMLElement("message", namespace: XMLNamespace.server, ["to": "romeo@b.example"], [])
        #expect(try encoder.write(.element(message)) == "<message to='romeo@b.example'/>")
    }

    @Test func stanzasCarryNoRedundantNamespace() throws {
        let encoder = try Encoder()
        _ = try encoder.write(.open(Self.serverOpening))
        let message = XMLElement(
            "message", namespace: XMLNamespace.client, ["to": "romeo@example.net", "type": "chat"],
            [XMLElement("body", text: "hi & <bye>")])
        #expect(
            try encoder.write(.element(message))
                == "<message to='romeo@example.net' type='chat'><body>hi &amp; &lt;bye&gt;</body></message>")

        // An element built without a namespace takes the stream's.
        let presence = XMLElement("presence", [:], [XMLElement("show", text: "away")])
        #expect(try encoder.write(.element(presence)) == "<presence><show>away</show></presence>")

        // A payload declares its own namespace once; its children inherit it.
        let iq = XMLElement(
            "iq", namespace: XMLNamespace.client, ["type": "result", "id": "b1"],
            [XMLElement("bind", namespace: XMLNamespace.bind, [:], [XMLElement("jid", text: "juliet@example.com/balcony")])])
        #expect(
            try encoder.write(.element(iq))
                == "<iq type='result' id='b1'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><jid>juliet@example.com/balcony</jid></bind></iq>"
        )
    }

    @Test func streamLevelElementsUseTheStreamPrefix() throws {
        let encoder = try Encoder()
        _ = try encoder.write(.open(Self.serverOpening))
        #expect(
            try encoder.write(.element(Self.features))
                == "<stream:features><starttls xmlns='urn:ietf:params:xml:ns:xmpp-tls'><required/></starttls>"
                + "<mechanisms xmlns='urn:ietf:params:xml:ns:xmpp-sasl'><mechanism>SCRAM-SHA-256</mechanism>"
                + "<mechanism>PLAIN</mechanism></mechanisms></stream:features>")
    }

    @Test func errorWritesStreamErrorAndCloses() throws {
        let encoder = try Encoder()
        _ = try encoder.write(.open(Self.serverOpening))
        #expect(
            try encoder.write(.error(StreamError(.hostUnknown, text: "No such host.")))
                == "<stream:error><host-unknown xmlns='urn:ietf:params:xml:ns:xmpp-streams'/>"
                + "<text xmlns='urn:ietf:params:xml:ns:xmpp-streams' xml:lang='en'>No such host.</text>"
                + "</stream:error></stream:stream>")
    }

    /// RFC 6120 §4.9.1.1: an error before our header still goes inside a stream of our own.
    @Test func errorBeforeOpenOpensTheFallbackStreamFirst() throws {
        let encoder = try Encoder(fallbackOpening: StreamOpening(from: "example.com", id: "e1"))
        let text = try encoder.write(.error(StreamError(.invalidNamespace)))
        #expect(
            text
                == "<?xml version='1.0'?><stream:stream \(Self.streamAttributes) from='example.com' id='e1' version='1.0' xml:lang='en'>"
                + "<stream:error><invalid-namespace xmlns='urn:ietf:params:xml:ns:xmpp-streams'/></stream:error></stream:stream>")
        try SchemaValidator.shared.validate(text)
    }

    @Test func whitespaceIsOneSpace() throws {
        let encoder = try Encoder()
        _ = try encoder.write(.open(Self.serverOpening))
        #expect(try encoder.write(.whitespace) == " ")
    }

    @Test func closeWritesTheEndTag() throws {
        let encoder = try Encoder()
        _ = try encoder.write(.open(Self.serverOpening))
        #expect(try encoder.write(.close) == "</stream:stream>")
    }

    /// A restart re-sends the declaration and header; the second stream is on its own.
    @Test func reopeningAfterARestartWritesAWholeNewHeader() throws {
        let encoder = try Encoder()
        let first = try encoder.write(.open(Self.serverOpening))
        var second = Self.serverOpening
        second.id = "s9"
        let text = try encoder.write(.open(second))
        #expect(text == first.replacingOccurrences(of: "s4e8a2", with: "s9"))
    }

    // MARK: Whole streams against the schemas

    @Test func wholeStreamWithFeaturesAndErrorIsValid() throws {
        let encoder = try Encoder()
        var stream = try encoder.write(.open(Self.serverOpening))
        stream += try encoder.write(.element(Self.features))
        stream += try encoder.write(.whitespace)
        stream += try encoder.write(
            .error(StreamError(.policyViolation, text: "A stanza is larger than 262144 bytes.")))
        try SchemaValidator.shared.validate(stream)
    }

    @Test func wholeStreamWithStanzasAndCloseIsValid() throws {
        let encoder = try Encoder()
        var stream = try encoder.write(.open(Self.serverOpening))
        stream += try encoder.write(.element(Self.features))
        for stanza in RoundTripTests.stanzas { stream += try encoder.write(.element(stanza)) }
        stream += try encoder.write(.close)
        try SchemaValidator.shared.validate(stream)
    }

    /// The validator is not a rubber stamp: a stream error in the wrong namespace is refused.
    @Test func validatorRefusesAnInvalidStream() throws {
        let encoder = try Encoder()
        var stream = try encoder.write(.open(Self.serverOpening))
        stream += try encoder.write(
            .element(XMLElement("error", namespace: XMLNamespace.streams, [:], [XMLElement("no-such-condition", namespace: XMLNamespace.streamErrors)])))
        stream += try encoder.write(.close)
        #expect(throws: SchemaValidator.Failure.self) { try SchemaValidator.shared.validate(stream) }
    }
}
