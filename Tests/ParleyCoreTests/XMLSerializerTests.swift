import ParleyCore
import ParleyTestSupport
import Testing

@Suite struct XMLSerializerTests {
    @Test func stanzaInsideClientStreamCarriesNoRedundantDeclarations() {
        let message = XMLElement(
            "message", namespace: XMLNamespace.client, ["to": "juliet@example.com", "type": "chat"],
            [
                XMLElement("body", text: "Art thou not Romeo?"),
                XMLElement("request", namespace: "urn:xmpp:receipts", [:]),
            ])
        #expect(
            message.xmlString(context: .clientStream)
                == "<message to='juliet@example.com' type='chat'><body>Art thou not Romeo?</body><request xmlns='urn:xmpp:receipts'/></message>"
        )
    }

    @Test func standaloneElementDeclaresItsNamespaceOnce() {
        let iq = XMLElement(
            "iq", namespace: XMLNamespace.client, ["type": "set", "id": "b1"],
            [XMLElement("bind", namespace: XMLNamespace.bind, [:], [XMLElement("resource", text: "balcony")])])
        #expect(
            iq.xmlString()
                == "<iq xmlns='jabber:client' type='set' id='b1'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><resource>balcony</resource></bind></iq>"
        )
    }

    @Test func childrenInheritNamespaceWhenBuilt() {
        let bind = XMLElement("bind", namespace: XMLNamespace.bind, [:], [XMLElement("resource", text: "r")])
        #expect(bind.firstChild("resource", namespace: XMLNamespace.bind)?.text == "r")
        var query = XMLElement("query", namespace: "jabber:iq:roster")
        query.append(XMLElement("item", ["jid": "a@b"]))
        #expect(query.firstChild("item", namespace: "jabber:iq:roster")?[attribute: "jid"] == "a@b")
    }

    @Test func escapesMarkupInTextAndAttributes() {
        let body = XMLElement("body", namespace: XMLNamespace.client, ["id": "a'b\"c<d>&e"], text: "1 < 2 & 3 > 2 ' \"")
        #expect(
            body.xmlString(context: .clientStream)
                == "<body id='a&apos;b&quot;c&lt;d&gt;&amp;e'>1 &lt; 2 &amp; 3 &gt; 2 ' \"</body>")
    }

    @Test func dropsControlCharactersXMLCannotCarryAndProtectsWhitespace() {
        let body = XMLElement("body", namespace: XMLNamespace.client, ["a": "x\ny\tz"], text: "a\u{0}b\u{1B}c\r\nd\te")
        #expect(body.xmlString(context: .clientStream) == "<body a='x&#10;y&#9;z'>abc&#13;\nd\te</body>")
    }

    @Test func multibyteTextIsWrittenUnchanged() {
        let body = XMLElement("body", namespace: XMLNamespace.client, text: "Grüße 👋 日本語")
        #expect(body.xmlString(context: .clientStream) == "<body>Grüße 👋 日本語</body>")
    }

    @Test func streamNamespaceUsesBoundPrefix() {
        let error = StreamError(.notWellFormed, text: "bad")
        #expect(
            error.element.xmlString(context: .clientStream)
                == "<stream:error><not-well-formed xmlns='urn:ietf:params:xml:ns:xmpp-streams'/><text xmlns='urn:ietf:params:xml:ns:xmpp-streams' xml:lang='en'>bad</text></stream:error>"
        )
    }

    @Test func xmlLangAttributeUsesXMLPrefix() {
        let message = XMLElement(
            "message", namespace: XMLNamespace.client,
            attributes: [XMLAttribute("lang", "de", namespace: XMLNamespace.xml)])
        #expect(message.xmlString(context: .clientStream) == "<message xml:lang='de'/>")
        #expect(message.attribute("lang", namespace: XMLNamespace.xml) == "de")
    }

    @Test func setAttributeReplacesAndRemoves() {
        var element = XMLElement("presence", namespace: XMLNamespace.client, ["to": "a@b", "type": "probe"])
        element.from = "c@d/e"
        element.to = nil
        element.type = "subscribe"
        #expect(element.xmlString(context: .clientStream) == "<presence type='subscribe' from='c@d/e'/>")
    }

    @Test func errorReplySwapsAddressesAndNeverAnswersAnError() throws {
        let request = XMLElement(
            "iq", namespace: XMLNamespace.client, ["from": "a@b/c", "to": "b", "id": "x1", "type": "get"],
            [XMLElement("query", namespace: "urn:example:unknown", [:])])
        let reply = try #require(request.errorReply(StanzaError(.serviceUnavailable)))
        let xml = reply.xmlString()
        #expect(
            xml == "<iq xmlns='jabber:client' to='a@b/c' from='b' id='x1' type='error'><error type='cancel'><service-unavailable xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></iq>"
        )
        try SchemaValidator.shared.validate(xml)
        #expect(reply.errorReply(StanzaError(.badRequest)) == nil)
        let parsedBack = try #require(StanzaError(stanza: reply))
        #expect(parsedBack.condition == .serviceUnavailable && parsedBack.type == .cancel)
    }

    @Test func everyStreamErrorValidatesAgainstSchema() throws {
        for condition in StreamErrorCondition.allCases {
            let error = StreamError(condition, text: "because", otherHost: "other.example:5222")
            let xml = "<stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>"
                + error.element.xmlString(context: .clientStream) + "</stream:stream>"
            try SchemaValidator.shared.validate(xml)
            #expect(StreamError(element: error.element) == error || condition != .seeOtherHost)
            #expect(StreamError(element: error.element).condition == condition)
        }
    }

    @Test func everyStanzaErrorValidatesAgainstSchema() throws {
        let message = XMLElement("message", namespace: XMLNamespace.client, ["from": "a@b/c", "to": "d@e", "type": "chat"])
        for condition in StanzaErrorCondition.allCases {
            let reply = try #require(message.errorReply(StanzaError(condition, text: "why")))
            try SchemaValidator.shared.validate(reply.xmlString())
            #expect(StanzaError(stanza: reply)?.type == condition.defaultType)
        }
    }

    @Test func schemaRejectsInvalidStanzas() {
        #expect(throws: SchemaValidator.Failure.self) {
            try SchemaValidator.shared.validate("<iq xmlns='jabber:client' type='get'/>")
        }
        #expect(throws: SchemaValidator.Failure.self) {
            try SchemaValidator.shared.validate("<presence xmlns='jabber:client'><show>sleeping</show></presence>")
        }
    }
}
