import ParleyCore
import Testing

/// The parser writes a stanza over the arena of the one before when every reader of that one
/// has let go. A stanza someone still holds must never change, and a stanza written over an
/// old one must read as if it had its own arena: no bytes, names or counts of the old one.
@Suite struct XMLArenaReuseTests {
    static let header =
        "<?xml version='1.0'?><stream:stream to='example.com' version='1.0' xml:lang='en' "
        + "xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>"

    /// Stanzas of changing shape: bodies long and short, more or fewer children and attributes.
    static func stanza(_ index: Int) -> String {
        let body = String(repeating: "word\(index) ", count: [9, 1, 4, 0, 13][index % 5])
        let extra = index % 3 == 0 ? "<request xmlns='urn:xmpp:receipts'/><x xmlns='urn:x' a='\(index)' b='&amp;'/>" : ""
        let type = ["chat", "normal", "chats", "headline"][index % 4]
        return "<message to='c\(index)@example.net' id='m\(index)' type='\(type)'><body>\(body)</body>\(extra)</message>"
    }

    /// Feeds `stanzas` in 100-byte chunks and hands each parsed stanza to `check` with its index.
    func parse(_ stanzas: [String], _ check: (Int, XMLElement) -> Void) throws {
        let parser = XMLStreamParser()
        let bytes = Array((Self.header + stanzas.joined()).utf8)
        var index = 0
        var offset = 0
        while offset < bytes.count {
            let end = min(offset + 100, bytes.count)
            _ = try ParserTesting.feed(parser, bytes, offset..<end) { event in
                if case .stanza(let element) = event {
                    check(index, element)
                    index += 1
                }
                return .continue
            }
            offset = end
        }
        #expect(index == stanzas.count)
    }

    /// The stanza parsed on its own by a parser of its own, serialized: what reuse must not change.
    static func alone(_ stanza: String) throws -> String {
        let events = try ParserTesting.events(Array((header + stanza).utf8))
        return ParserTesting.stanzas(events).map { $0.xmlString() }.joined()
    }

    @Test func eachStanzaReadsAsSentWhenTheLastOneWasLetGo() throws {
        let sent = (0..<200).map(Self.stanza)
        let expected = try sent.map(Self.alone)
        try parse(sent) { index, element in
            #expect(element.xmlString() == expected[index])
            #expect(element.type == ["chat", "normal", "chats", "headline"][index % 4])
            #expect(element.firstChild("body")?.text.count == [9, 1, 4, 0, 13][index % 5] * "word\(index) ".count)
        }
    }

    @Test func aStanzaStillHeldNeverChanges() throws {
        let sent = (0..<200).map(Self.stanza)
        var held: [(Int, XMLElement, String)] = []
        try parse(sent) { index, element in
            // Every third stanza is kept, the others let go at once, so arenas are reused all along.
            if index % 3 == 0 { held.append((index, element, element.xmlString())) }
        }
        #expect(held.count == 67)
        for (index, element, serialized) in held {
            #expect(element.xmlString() == serialized)
            #expect(serialized == (try Self.alone(sent[index])))
            #expect(element.id == "m\(index)")
        }
    }

    /// Names no two alike fill libxml2's dictionary until the parser renews its context, and so
    /// its name table, between two stanzas: a reused arena must take the new table.
    @Test func namesReadRightAcrossContextRenewals() throws {
        let longName = String(repeating: "n", count: 200)
        let sent = (0..<1500).map { index in
            "<iq type='get' id='\(index)'><q-\(index)-\(longName) xmlns='urn:\(index):\(longName)'/></iq>"
        }
        try parse(sent) { index, element in
            #expect(element.id == "\(index)" && element.type == "get")
            #expect(element.elements.first?.name == "q-\(index)-\(longName)")
            #expect(element.elements.first?.namespace == "urn:\(index):\(longName)")
        }
    }

    /// `type` comes back as a literal for the values the RFCs define, and as itself otherwise.
    @Test(arguments: [
        "get", "set", "result", "error", "chat", "normal", "groupchat", "headline", "probe", "subscribe",
        "subscribed", "unsubscribe", "unsubscribed", "unavailable",
        "", "Chat", "chat2", "sets", "subscribedd", "unavailablé", "groupchat-like-but-longer",
    ])
    func typeReadsAsSent(_ type: String) throws {
        var seen: [String?] = []
        try parse(["<message type='\(type)'/>", "<presence type='\(type)' id='x'/>"]) { _, element in
            seen.append(element.type)
        }
        #expect(seen == [type, type])
    }
}
