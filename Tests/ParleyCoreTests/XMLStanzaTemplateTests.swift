import ParleyCore
import Testing

/// A stanza made from a template (`XMLStanzaTemplate.instance`) writes exactly what the same
/// stanza built as a plain element would, in its own context and in any other, reads as that
/// element, and becomes a plain one once changed.
@Suite struct XMLStanzaTemplateTests {
    private static let event = XMLElement(
        "event", namespace: "http://jabber.org/protocol/pubsub#event", [:],
        [XMLElement("items", ["node": "urn:example:x"], [XMLElement("item", ["id": "a>b"], [XMLElement("x", namespace: "urn:example:x", text: "1 < 2")])])])

    private static func template(_ children: [XMLElement] = [event]) -> XMLStanzaTemplate {
        XMLStanzaTemplate(
            XMLElement("message", namespace: XMLNamespace.client, ["from": "romeo@example.net", "type": "headline"], children),
            context: .clientStream)
    }

    private static func plain(to: String, id: String, _ children: [XMLElement] = [event]) -> XMLElement {
        XMLElement("message", namespace: XMLNamespace.client, ["from": "romeo@example.net", "type": "headline", "to": to, "id": id], children)
    }

    private static func own(to: String, id: String) -> [XMLAttribute] {
        [XMLAttribute("to", to), XMLAttribute("id", id)]
    }

    @Test func writesWhatThePlainStanzaWouldInEveryContext() {
        let template = Self.template()
        // Escaping applies to the recipients' attributes too.
        for (to, id) in [("juliet@example.com/balcony", "1"), ("o'brien@example.com/<r>", "2&3")] {
            let copy = template.instance(Self.own(to: to, id: id))
            for context in [XMLNamespaceContext.clientStream, XMLNamespaceContext()] {
                #expect(copy.xmlString(context: context) == Self.plain(to: to, id: id).xmlString(context: context))
            }
        }
        #expect(
            template.instance(Self.own(to: "j@example.com", id: "1")).xmlString(context: .clientStream)
                .hasPrefix("<message from='romeo@example.net' type='headline' to='j@example.com' id='1'><event xmlns="))
    }

    @Test func anEmptyStanzaClosesItsStartTagAfterTheOwnAttributes() {
        let copy = Self.template([]).instance(Self.own(to: "j@example.com", id: "7"))
        #expect(copy.xmlString(context: .clientStream) == "<message from='romeo@example.net' type='headline' to='j@example.com' id='7'/>")
    }

    @Test func readsAsThePlainStanzaAndChangesMakeItPlain() {
        var copy = Self.template().instance(Self.own(to: "j@example.com", id: "9"))
        #expect(copy == Self.plain(to: "j@example.com", id: "9"))
        #expect(copy.to == "j@example.com" && copy.id == "9" && copy.type == "headline" && copy.from == "romeo@example.net")
        #expect(copy.firstChild("event", namespace: "http://jabber.org/protocol/pubsub#event") != nil)
        copy.to = "other@example.com"
        #expect(copy == Self.plain(to: "other@example.com", id: "9"))
        #expect(copy.xmlString(context: .clientStream) == Self.plain(to: "other@example.com", id: "9").xmlString(context: .clientStream))
    }
}
