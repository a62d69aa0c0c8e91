import ParleyCore
import Testing

/// An idle stream gives libxml2's context back and parses on as if nothing happened.
@Suite struct XMLStreamParserIdleMemoryTests {
    static let header = "<?xml version='1.0'?><stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams' to='localhost' version='1.0'>"

    @Test func releasesBetweenStanzasAndParsesTheNextOneTheSame() throws {
        let parser = XMLStreamParser()
        _ = try parser.feed(Array((Self.header + "<presence/>  \n ").utf8))
        #expect(parser.releaseIdleMemory())
        let events = try parser.feed(Array("<message to='a@b' xml:lang='en'><body>x &amp; y</body><stream:features/></message>".utf8))
        let reference = XMLStreamParser()
        let expected = try reference.feed(Array((Self.header + "<message to='a@b' xml:lang='en'><body>x &amp; y</body><stream:features/></message>").utf8)).dropFirst()
        #expect(events == Array(expected))
        #expect(parser.releaseIdleMemory())
        #expect(try parser.feed(Array("</stream:stream>".utf8)) == [.streamClosed])
    }

    @Test func keepsTheContextWhileAStanzaIsIncomplete() throws {
        let parser = XMLStreamParser()
        _ = try parser.feed(Array((Self.header + "<message><body>half").utf8))
        #expect(!parser.releaseIdleMemory())
        let rest = try parser.feed(Array("</body></message><m".utf8))
        #expect(rest.count == 1)
        #expect(!parser.releaseIdleMemory())  // a start tag is half-way in
    }

    @Test func beforeTheHeaderNothingIsReleased() throws {
        let parser = XMLStreamParser()
        #expect(!parser.releaseIdleMemory())
        _ = try parser.feed(Array("<?xml version='1.0'?><stream:stream xmlns='jabber:cl".utf8))
        #expect(!parser.releaseIdleMemory())
    }

    @Test func aRestartAfterAReleaseStartsAFreshStream() throws {
        let parser = XMLStreamParser()
        _ = try parser.feed(Array((Self.header + "<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl'/>").utf8))
        #expect(parser.releaseIdleMemory())
        parser.reset()
        let events = try parser.feed(Array((Self.header + "<iq type='get' id='1'/>").utf8))
        #expect(events.count == 2)
    }
}
