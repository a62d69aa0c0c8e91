import ParleyCore
import Testing

/// An element serialized once (`serializedOnce(in:)`) writes exactly what the element itself
/// would, in its own context and in any other, reads as the original, and stops using the
/// stored bytes once changed.
@Suite struct XMLVerbatimTests {
    private static let event = XMLElement(
        "event", namespace: "http://jabber.org/protocol/pubsub#event", [:],
        [
            XMLElement(
                "items", ["node": "http://jabber.org/protocol/tune"],
                [XMLElement("item", ["id": "a&b"], [XMLElement("tune", namespace: "http://jabber.org/protocol/tune", [:], [XMLElement("title", text: "1 < 2")])])])
        ])

    private static func message(_ payload: XMLElement) -> XMLElement {
        XMLElement("message", namespace: XMLNamespace.client, ["to": "juliet@example.com", "type": "headline"], [payload])
    }

    @Test func writesWhatTheElementWouldInEveryContext() {
        let shared = Self.event.serializedOnce(in: .clientStream)
        for context in [XMLNamespaceContext.clientStream, XMLNamespaceContext()] {
            #expect(Self.message(shared).xmlString(context: context) == Self.message(Self.event).xmlString(context: context))
        }
        #expect(shared.xmlString() == Self.event.xmlString())
    }

    /// A child in the stream's default namespace has no declaration in the stored bytes; written
    /// where that namespace is not the default, it must get one.
    @Test func anotherContextGetsItsOwnDeclarations() {
        let body = XMLElement("body", namespace: XMLNamespace.client, [:], text: "hi").serializedOnce(in: .clientStream)
        #expect(Self.message(body).xmlString(context: .clientStream) == "<message to='juliet@example.com' type='headline'><body>hi</body></message>")
        #expect(body.xmlString() == "<body xmlns='jabber:client'>hi</body>")
    }

    @Test func readsAsTheOriginalAndChangesDropTheBytes() {
        var shared = Self.event.serializedOnce(in: .clientStream)
        #expect(shared == Self.event)
        #expect(shared.firstChild("items")?[attribute: "node"] == "http://jabber.org/protocol/tune")
        shared.append(XMLElement("extra", [:]))
        #expect(
            shared.xmlString(context: .clientStream).hasSuffix("</items><extra/></event>"))
    }

    /// A message as a client sends it: parsed, so its children are views into the stanza.
    private static func parsedMessage() throws -> XMLElement {
        let parser = XMLStreamParser()
        let text = "<stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>"
            + "<message to='bob@localhost' type='chat' id='a&amp;b' xml:lang='en'><body>1 &lt; 2 &amp; \u{1F600}</body>"
            + "<origin-id xmlns='urn:xmpp:sid:0' id='o1'/><html xmlns='http://jabber.org/protocol/xhtml-im'>"
            + "<body xmlns='http://www.w3.org/1999/xhtml'><p>hi</p></body></html></message>"
        for case .stanza(let stanza) in try parser.feed(Array(text.utf8)) { return stanza }
        throw StreamError(.badFormat)
    }

    /// The stanza-id a recipient's copy gets after the archive serialized the message: the
    /// kept bytes must be what the element with the child would be written as, everywhere.
    @Test func appendingKeepsTheSerializationAndWritesWhatAnAppendWould() throws {
        let child = XMLElement("stanza-id", namespace: XMLNamespace.stanzaID, ["id": "x'<y", "by": "bob@localhost"])
        for message in [try Self.parsedMessage(), Self.message(Self.event)] {
            var plain = message
            plain.append(child)
            let kept = message.serializedOnce(in: .clientStream).appendingKeepingSerialization(child)
            #expect(kept.serializedBytes(in: .clientStream) != nil)
            #expect(kept == plain)
            for context in [XMLNamespaceContext.clientStream, XMLNamespaceContext()] {
                #expect(kept.xmlString(context: context) == plain.xmlString(context: context))
            }
        }
    }

    /// Without kept bytes, or with ones that do not end in the element's own end tag, it is a
    /// plain append.
    @Test func appendingWithoutKeptBytesIsAPlainAppend() {
        let child = XMLElement("extra", namespace: "urn:example", [:])
        var plain = Self.message(Self.event)
        plain.append(child)
        let unserialized = Self.message(Self.event).appendingKeepingSerialization(child)
        #expect(unserialized.serializedBytes(in: .clientStream) == nil)
        #expect(unserialized.xmlString(context: .clientStream) == plain.xmlString(context: .clientStream))
        let empty = XMLElement("message", namespace: XMLNamespace.client, ["to": "juliet@example.com"]).serializedOnce(in: .clientStream)
        let appended = empty.appendingKeepingSerialization(child)
        #expect(appended.serializedBytes(in: .clientStream) == nil)
        #expect(appended.xmlString(context: .clientStream) == "<message to='juliet@example.com'><extra xmlns='urn:example'/></message>")
    }
}
