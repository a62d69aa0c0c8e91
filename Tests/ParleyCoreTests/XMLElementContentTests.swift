import ParleyCore
import Testing

/// What a text-only element means, pinned down for any future change of `XMLElement`'s
/// storage (such as keeping a sole text node without an array): `children`, `text`, equality
/// and hashing must behave as with a plain `[XMLNode]`, and built elements must equal parsed ones.
@Suite struct XMLElementContentTests {
    static let ns = XMLNamespace.client

    static func parsedStanza(_ xml: String) throws -> XMLElement {
        let events = try ParserTesting.events(ParserTesting.streamHeader + xml)
        return try #require(ParserTesting.stanzas(events).first)
    }

    @Test func builtAndParsedTextElementsAreEqual() throws {
        let parsed = try Self.parsedStanza("<message><body>hello there, a body over fifteen bytes</body></message>")
        let body = try #require(parsed.firstChild("body"))
        let text = "hello there, a body over fifteen bytes"
        let viaChildren = XMLElement("body", namespace: Self.ns, children: [.text(text)])
        let viaText = XMLElement("body", namespace: Self.ns, text: text)
        var viaAppend = XMLElement("body", namespace: Self.ns)
        viaAppend.append(text: text)
        var viaSetter = XMLElement("body", namespace: Self.ns)
        viaSetter.children = [.text(text)]
        var viaInPlace = XMLElement("body", namespace: Self.ns)
        viaInPlace.children.append(.text(text))
        for built in [viaChildren, viaText, viaAppend, viaSetter, viaInPlace] {
            #expect(built == body)
            #expect(built.hashValue == body.hashValue)
            #expect(built.children == [.text(text)])
            #expect(built.text == text)
        }
        #expect(Set([body, viaChildren, viaText, viaAppend, viaSetter, viaInPlace]).count == 1)
        #expect(body.children == [.text(text)])
        #expect(body.elements.isEmpty)
        #expect(body.firstChild("x") == nil)
        #expect(body.firstChild(inNamespace: Self.ns) == nil)

        let message = XMLElement("message", namespace: Self.ns, attributes: [], children: [.element(viaText)])
        #expect(message == parsed)
        #expect(message.hashValue == parsed.hashValue)
    }

    @Test func emptyTextNodeIsKeptDistinctFromNoChildren() {
        let empty = XMLElement("b", namespace: Self.ns)
        let emptyText = XMLElement("b", namespace: Self.ns, children: [.text("")])
        #expect(emptyText.children == [.text("")])
        #expect(empty.children.isEmpty)
        #expect(empty != emptyText)
        #expect(XMLElement("b", namespace: Self.ns, text: "") == empty)
        #expect(empty.xmlString() == "<b xmlns='jabber:client'/>")
    }

    @Test func appendingToATextElementKeepsEveryNode() {
        var element = XMLElement("b", namespace: Self.ns, text: "one")
        element.append(text: "two")
        #expect(element.children == [.text("one"), .text("two")])
        #expect(element.text == "onetwo")
        #expect(element != XMLElement("b", namespace: Self.ns, text: "onetwo"))
        element.append(XMLElement("i", text: "x"))
        #expect(element.children.count == 3)
        #expect(element.firstChild("i")?.namespace == Self.ns)
        #expect(element.elements == [XMLElement("i", namespace: Self.ns, text: "x")])
        #expect(element.xmlString() == "<b xmlns='jabber:client'>onetwo<i>x</i></b>")

        var textFirst = XMLElement("b", namespace: Self.ns, text: "t")
        textFirst.append(XMLElement("i", [:]))
        #expect(textFirst.children == [.text("t"), .element(XMLElement("i", namespace: Self.ns))])
        #expect(textFirst.text == "t")
    }

    @Test func mutationsThatLeaveOneTextNodeNormalise() {
        var element = XMLElement(
            "b", namespace: Self.ns, children: [.text("keep"), .element(XMLElement("i", [:]))])
        element.removeChildren { $0.name == "i" }
        #expect(element == XMLElement("b", namespace: Self.ns, text: "keep"))
        #expect(element.hashValue == XMLElement("b", namespace: Self.ns, text: "keep").hashValue)

        var viaSubscript = XMLElement("b", namespace: Self.ns, children: [.text("a"), .text("b")])
        viaSubscript.children.removeLast()
        #expect(viaSubscript == XMLElement("b", namespace: Self.ns, text: "a"))
        viaSubscript.children[0] = .text("c")
        #expect(viaSubscript.text == "c")
        #expect(viaSubscript == XMLElement("b", namespace: Self.ns, children: [.text("c")]))
        viaSubscript.children.removeAll()
        #expect(viaSubscript == XMLElement("b", namespace: Self.ns))
        #expect(viaSubscript.text == "")

        var replaced = XMLElement("b", namespace: Self.ns, text: "x")
        replaced.children = [.element(XMLElement("i", namespace: Self.ns))]
        #expect(replaced.text == "")
        #expect(replaced.elements.count == 1)
        replaced.children = []
        #expect(replaced == XMLElement("b", namespace: Self.ns))
    }

    @Test func textElementsSerialiseAndRoundTrip() throws {
        let message = XMLElement(
            "message", namespace: Self.ns, ["to": "juliet@example.com"],
            [XMLElement("body", text: "1 < 2 & ünïcødé"), XMLElement("subject", text: "s")])
        let xml = message.xmlString(context: .clientStream)
        #expect(xml == "<message to='juliet@example.com'><body>1 &lt; 2 &amp; ünïcødé</body><subject>s</subject></message>")
        #expect(try Self.parsedStanza(xml) == message)
    }

    /// Character data arrives in pieces (chunk boundaries, references) and is gathered in a
    /// buffer that starts at 1 KiB: a long body, in small chunks, must come out whole.
    @Test func longTextInSmallChunksIsMergedWhole() throws {
        let text = String(repeating: "0123456789 ünï &amp; ", count: 300)  // ≈ 6.9 KB
        let expected = String(repeating: "0123456789 ünï & ", count: 300)
        let xml = ParserTesting.streamHeader + "<message><body>\(text)</body><b>x</b>tail</message>"
        for chunking in [ParserTesting.Chunking.whole, .fixed(7), .random(seed: 9, maxSize: 300)] {
            let stanza = try #require(ParserTesting.stanzas(try ParserTesting.events(xml, chunking)).first)
            #expect(stanza.firstChild("body")?.text == expected)
            #expect(stanza.firstChild("body")?.children == [.text(expected)])
            #expect(stanza.children.last == .text("tail"))
        }
    }

    @Test func namespaceIsInheritedThroughTextAndMixedContent() {
        let inner = XMLElement("resource", text: "r")
        let mixed = XMLElement("note", children: [.text("a"), .element(inner)])
        let bind = XMLElement("bind", namespace: XMLNamespace.bind, [:], [inner, mixed])
        #expect(bind.firstChild("resource", namespace: XMLNamespace.bind)?.text == "r")
        let note = bind.firstChild("note", namespace: XMLNamespace.bind)
        #expect(note?.firstChild("resource", namespace: XMLNamespace.bind)?.text == "r")
    }
}
