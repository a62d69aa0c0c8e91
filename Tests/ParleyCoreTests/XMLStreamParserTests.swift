import ParleyCore
import Testing

/// A client's side of a c2s session as it crosses the wire: the first stream up to
/// `<starttls/>`, the stream after TLS up to `<auth/>`, then the authenticated stream.
/// (Over a real connection the later streams are encrypted; the parser sees the same bytes.)
private let session: [UInt8] = Array(
    (
        "<?xml version='1.0'?>"
        + "<stream:stream to='example.com' version='1.0' xml:lang='en' xmlns='jabber:client' "
        + "xmlns:stream='http://etherx.jabber.org/streams'>\n"
        + "<starttls xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>"
        // After TLS.
        + "<?xml version='1.0' encoding='UTF-8'?>"
        + "<stream:stream xmlns:stream=\"http://etherx.jabber.org/streams\" xmlns=\"jabber:client\" "
        + "to=\"example.com\" version=\"1.0\">"
        + "<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>AGp1bGlldAByMG0zMG15cjBtMzA=</auth>"
        // After SASL success.
        + "<stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams' "
        + "to='example.com' version='1.0'>"
        + "<iq type='set' id='bind_1'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'>"
        + "<resource>balcony</resource></bind></iq>\n"
        + "<presence><show>chat</show><status xml:lang='en'>Wherefore art thou?</status>"
        + "<c xmlns='http://jabber.org/protocol/caps' hash='sha-1' node='https://gajim.org' "
        + "ver='QgayPKawpkPSDYmwT/WM94uAlu0='/></presence>\n \n\t"
        + "<message to='romeo@example.net' from='juliet@example.com/balcony' type='chat' id='m1' xml:lang='en'>"
        + "<body>Art thou not Romeo, &amp; a Montague? 1 &lt; 2 &gt; 0</body>"
        + "<request xmlns='urn:xmpp:receipts'/></message>"
        + " "
        + "<message to='romeo@example.net/orchard' type='chat' id=\"q&amp;&quot;a&apos;&lt;b>c\">"
        + "<body xml:lang='it'>Ciao — caffè ☕ &#x1F600;</body><thread>t1</thread>"
        + "<x xmlns='jabber:x:data' type='form'>"
        + "<field var='a' label='He said &quot;hi&quot; &amp; left, 1 > 0'><value>1</value></field></x></message>"
        + "\n\n"
        + "<message to='romeo@example.net' type='chat' id='m3'>"
        + "<body><![CDATA[<not a tag> & raw]]> and more</body>"
        + "<html xmlns='http://jabber.org/protocol/xhtml-im'><body xmlns='http://www.w3.org/1999/xhtml'>"
        + "<p style='font-weight:bold'>Hi <em>there</em>!</p></body></html></message>"
        + "<iq type='get' id='ping1' to='example.com'><ping xmlns='urn:xmpp:ping'/></iq>"
        + "<iq type='set' id='r1'><query xmlns='jabber:iq:roster'>"
        + "<item jid='nurse@example.com' name='Nurse'><group>Servants</group></item></query></iq>"
        + "<message type='chat' to='x@y' id='pre'><foo:data xmlns:foo='urn:example:foo' foo:attr='v'>bar</foo:data></message>"
        + " "
        + "</stream:stream>"
    ).utf8)

private struct SessionRun: Equatable {
    var events: [XMLStreamEvent] = []
    /// Absolute offsets in `session` where the parser stopped.
    var stops: [Int] = []
}

/// Feeds the session in the given chunks, stopping after `<starttls/>` and `<auth/>`, then
/// resetting and feeding the rest of the chunk to the new stream, as the NIO handler does.
private func runSession(_ chunking: ParserTesting.Chunking) throws(StreamError) -> SessionRun {
    let parser = XMLStreamParser()
    var run = SessionRun()
    var offset = 0
    for size in chunking.sizes(total: session.count) {
        var start = offset
        let end = offset + size
        while start < end {
            var stopped = false
            let consumed = try ParserTesting.feed(parser, session, start..<end) { event in
                run.events.append(event)
                if case .stanza(let element) = event, element.name == "starttls" || element.name == "auth" {
                    stopped = true
                    return .stop
                }
                return .continue
            }
            if stopped {
                run.stops.append(start + consumed)
                parser.reset()
                start += consumed
            } else {
                #expect(consumed == end - start)
                start = end
            }
        }
        offset = end
    }
    return run
}

@Suite("XMLStreamParser: a recorded c2s session")
struct XMLStreamParserSessionTests {
    @Test func wholeSessionEvents() throws {
        let run = try runSession(.whole)
        let starttlsEnd = try #require(ParserTesting.offset(after: "<starttls xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>", in: session))
        let authEnd = try #require(ParserTesting.offset(after: "</auth>", in: session))
        #expect(run.stops == [starttlsEnd, authEnd])

        let kinds = run.events.map { event -> String in
            switch event {
            case .streamOpened: "open"
            case .stanza(let element): element.name
            case .streamClosed: "close"
            }
        }
        #expect(kinds == [
            "open", "starttls", "open", "auth", "open", "iq", "presence", "message", "message", "message",
            "iq", "iq", "message", "close",
        ])

        guard case .streamOpened(let first) = run.events[0] else { Issue.record("no header"); return }
        #expect(first.name == "stream")
        #expect(first.namespace == XMLNamespace.streams)
        #expect(first.prefix == "stream")
        #expect(first.namespaceDeclarations == ["": "jabber:client", "stream": XMLNamespace.streams])
        #expect(first[attribute: "to"] == "example.com")
        #expect(first[attribute: "version"] == "1.0")
        #expect(first.attributes.contains(XMLAttribute("lang", "en", namespace: XMLNamespace.xml)))
        #expect(first.defaultNamespace == "jabber:client")

        let stanzas = ParserTesting.stanzas(run.events)
        #expect(stanzas[0] == XMLElement("starttls", namespace: XMLNamespace.tls))
        #expect(
            stanzas[1]
                == XMLElement(
                    "auth", namespace: XMLNamespace.sasl, ["mechanism": "PLAIN"],
                    text: "AGp1bGlldAByMG0zMG15cjBtMzA="))
        #expect(
            stanzas[2]
                == XMLElement(
                    "iq", namespace: XMLNamespace.client, ["type": "set", "id": "bind_1"],
                    [XMLElement("bind", namespace: XMLNamespace.bind, [:], [XMLElement("resource", namespace: XMLNamespace.bind, text: "balcony")])]))
    }

    @Test func stanzaContents() throws {
        let stanzas = ParserTesting.stanzas(try runSession(.whole).events)
        let presence = stanzas[3]
        let status = try #require(presence.firstChild("status"))
        #expect(status.namespace == XMLNamespace.client)
        #expect(status.attribute("lang", namespace: XMLNamespace.xml) == "en")
        #expect(status.text == "Wherefore art thou?")
        let caps = try #require(presence.firstChild(inNamespace: "http://jabber.org/protocol/caps"))
        #expect(caps.name == "c")
        #expect(caps[attribute: "ver"] == "QgayPKawpkPSDYmwT/WM94uAlu0=")

        let first = stanzas[4]
        #expect(first.to == "romeo@example.net")
        #expect(first.from == "juliet@example.com/balcony")
        #expect(first.attribute("lang", namespace: XMLNamespace.xml) == "en")
        let body = try #require(first.firstChild("body"))
        // Text split by entity references arrives as one text node.
        #expect(body.children == [.text("Art thou not Romeo, & a Montague? 1 < 2 > 0")])
        #expect(first.firstChild("request", namespace: "urn:xmpp:receipts") != nil)

        let second = stanzas[5]
        #expect(second.id == "q&\"a'<b>c")
        #expect(second.firstChild("body")?.text == "Ciao — caffè ☕ 😀")
        #expect(second.firstChild("body")?.attribute("lang", namespace: XMLNamespace.xml) == "it")
        let field = try #require(second.firstChild("x", namespace: "jabber:x:data")?.firstChild("field"))
        #expect(field.namespace == "jabber:x:data")
        #expect(field[attribute: "label"] == "He said \"hi\" & left, 1 > 0")
        #expect(field.firstChild("value")?.text == "1")

        let third = stanzas[6]
        #expect(third.firstChild("body")?.children == [.text("<not a tag> & raw and more")])
        let xhtml = try #require(third.firstChild("html")?.firstChild("body", namespace: "http://www.w3.org/1999/xhtml"))
        let paragraph = try #require(xhtml.firstChild("p"))
        #expect(paragraph.namespace == "http://www.w3.org/1999/xhtml")
        #expect(
            paragraph.children == [
                .text("Hi "), .element(XMLElement("em", namespace: "http://www.w3.org/1999/xhtml", text: "there")),
                .text("!"),
            ])

        let prefixed = try #require(stanzas[9].elements.first)
        #expect(prefixed.name == "data")
        #expect(prefixed.namespace == "urn:example:foo")
        #expect(prefixed.attributes == [XMLAttribute("attr", "v", namespace: "urn:example:foo")])
        #expect(prefixed.text == "bar")
    }

    @Test(arguments: [
        ParserTesting.Chunking.fixed(1), .fixed(2), .fixed(3), .fixed(7), .fixed(64), .fixed(4096),
        .random(seed: 1, maxSize: 16), .random(seed: 2, maxSize: 16), .random(seed: 3, maxSize: 100),
        .random(seed: 4, maxSize: 100), .random(seed: 5, maxSize: 500), .random(seed: 6, maxSize: 1500),
    ])
    func chunkingDoesNotChangeEvents(_ chunking: ParserTesting.Chunking) throws {
        let whole = try runSession(.whole)
        let chunked = try runSession(chunking)
        #expect(chunked.stops == whole.stops)
        #expect(chunked.events == whole.events)
    }

    @Test func stanzaIsReportedWhenItsLastByteArrives() throws {
        let parser = XMLStreamParser()
        let bytes = Array((ParserTesting.streamHeader + "<message><body>hi</body></message>").utf8)
        var events: [XMLStreamEvent] = []
        for index in bytes.indices {
            _ = try ParserTesting.feed(parser, bytes, index..<(index + 1)) { events.append($0); return .continue }
            let expected = index == bytes.count - 1 ? 2 : (index >= ParserTesting.streamHeader.utf8.count - 1 ? 1 : 0)
            #expect(events.count == expected, "after byte \(index)")
        }
    }
}

@Suite("XMLStreamParser: stop, reset and values")
struct XMLStreamParserBehaviourTests {
    @Test func attributeAmpersandsAreDecoded() throws {
        let events = try ParserTesting.events(
            ParserTesting.streamHeader + "<message id='a&amp;b&#38;c&#x26;d &amp;#38; &amp;amp;' to='&lt;&gt;&quot;&apos;'/>")
        let message = try #require(ParserTesting.stanzas(events).first)
        #expect(message.id == "a&b&c&d &#38; &amp;")
        #expect(message.to == "<>\"'")
    }

    @Test func attributeWhitespaceIsNormalised() throws {
        let events = try ParserTesting.events(ParserTesting.streamHeader + "<message id='a\nb\tc&#10;d'/>")
        #expect(ParserTesting.stanzas(events).first?.id == "a b c\nd")
    }

    @Test func emptyStanzaAndWhitespaceInsideStanzasAreKept() throws {
        let events = try ParserTesting.events(
            ParserTesting.streamHeader + " <presence/>\n<message>\n  <body> x </body>\n</message>")
        let stanzas = ParserTesting.stanzas(events)
        #expect(stanzas.count == 2)
        #expect(stanzas[0] == XMLElement("presence", namespace: XMLNamespace.client))
        #expect(stanzas[1].children.count == 3)
        #expect(stanzas[1].children.first == .text("\n  "))
        #expect(stanzas[1].firstChild("body")?.text == " x ")
    }

    @Test func stopAfterStreamHeaderReturnsHeaderLength() throws {
        let parser = XMLStreamParser()
        let bytes = Array((ParserTesting.streamHeader + "<presence/>").utf8)
        var events: [XMLStreamEvent] = []
        let consumed = try ParserTesting.feed(parser, bytes, 0..<bytes.count) { events.append($0); return .stop }
        #expect(consumed == ParserTesting.streamHeader.utf8.count)
        #expect(events.count == 1)
    }

    @Test func feedingAfterStopWithoutResetFails() throws {
        let parser = XMLStreamParser()
        let bytes = Array((ParserTesting.streamHeader + "<presence/><presence/>").utf8)
        _ = try ParserTesting.feed(parser, bytes, 0..<bytes.count) { _ in .stop }
        #expect(throws: StreamError.self) { _ = try parser.feed(Array("<presence/>".utf8)) }
    }

    @Test func resetForgetsTheOldStreamsNamespaces() throws {
        let parser = XMLStreamParser()
        let first = Array((ParserTesting.streamHeader + "<starttls xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>").utf8)
        _ = try ParserTesting.feed(parser, first, 0..<first.count) { event in
            if case .stanza = event { return .stop }
            return .continue
        }
        parser.reset()
        // The new root uses the `stream:` prefix without declaring it.
        let error = #expect(throws: StreamError.self) {
            _ = try parser.feed(Array("<stream:stream xmlns='jabber:client' version='1.0'>".utf8))
        }
        #expect(error?.condition == .badNamespacePrefix)
    }

    @Test func resetRevivesTheParserAfterAnError() throws {
        let parser = XMLStreamParser()
        #expect(throws: StreamError.self) { _ = try parser.feed(Array("<stream:stream><<<".utf8)) }
        // Dead until reset.
        #expect(throws: StreamError.self) { _ = try parser.feed(Array(ParserTesting.streamHeader.utf8)) }
        parser.reset()
        let events = try parser.feed(Array((ParserTesting.streamHeader + "<presence/>").utf8))
        #expect(events.count == 2)
    }

    @Test func streamCloseIsReportedAndTrailingWhitespaceIsFine() throws {
        let events = try ParserTesting.events(ParserTesting.streamHeader + "<presence/></stream:stream>\n  \n")
        #expect(events.last == .streamClosed)
        #expect(events.count == 3)
    }

    @Test func utf8ByteOrderMarkAndDeclarationsAreAccepted() throws {
        let root = "<stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'><presence/>"
        for prefix in [
            [0xEF, 0xBB, 0xBF] + Array("<?xml version='1.0'?>".utf8),
            Array("<?xml version=\"1.0\" encoding=\"utf-8\" standalone='yes'?>".utf8),
            Array("<?xml version='1.0' encoding = 'UTF8' ?>\n".utf8),
            [0xEF, 0xBB, 0xBF],
        ] {
            for chunking in [ParserTesting.Chunking.whole, .fixed(1)] {
                let events = try ParserTesting.events(prefix + Array(root.utf8), chunking)
                #expect(events.count == 2, "\(prefix) \(chunking)")
            }
        }
    }

    @Test func unprefixedStreamsRootIsAccepted() throws {
        let events = try ParserTesting.events("<stream xmlns='http://etherx.jabber.org/streams'><x xmlns='y'/>")
        guard case .streamOpened(let header) = events.first else { Issue.record("no header"); return }
        #expect(header.prefix == nil)
        #expect(header.namespaceDeclarations == ["": XMLNamespace.streams])
        #expect(ParserTesting.stanzas(events).first?.namespace == "y")
    }
}
