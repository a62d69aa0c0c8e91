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
}
