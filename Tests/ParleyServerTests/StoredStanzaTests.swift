@testable import ParleyServer
import ParleyCore
import Testing

@Suite struct StoredStanzaTests {
    @Test func aBatchParsesLikeSingleStanzasAndSurvivesADamagedOne() throws {
        let messages = (1...3).map { index in
            XMLElement("message", namespace: XMLNamespace.client, ["to": "bob@localhost", "id": "m\(index)"], [XMLElement("body", text: "n°\(index) <&>")])
        }
        let texts = [StoredStanza.serialize(messages[0]), "<message><body>cut off", StoredStanza.serialize(messages[1]), "not xml at all", StoredStanza.serialize(messages[2])]
        let parsed = StoredStanza.parseAll(texts)
        #expect(parsed.count == 5)
        #expect(parsed[0] == StoredStanza.parse(texts[0]))
        #expect(parsed[0]?.firstChild("body")?.text == "n°1 <&>")
        #expect(parsed[1] == nil)
        #expect(parsed[2]?.id == "m2")
        #expect(parsed[3] == nil)
        #expect(parsed[4]?.id == "m3")
    }

    /// A message serialized once for a client stream (as the archive does before delivery) is
    /// stored as the same text as the message itself.
    @Test func aStanzaSerializedForAClientStreamIsStoredAsTheSameText() {
        let messages = [
            XMLElement(
                "message", namespace: XMLNamespace.client, ["to": "bob@localhost", "id": "q'\"<&>", "type": "chat"],
                [XMLElement("body", text: "n° <&> \u{1F600}"), XMLElement("origin-id", namespace: XMLNamespace.stanzaID, ["id": "o1"])]),
            XMLElement("message", ["to": "bob@localhost"], [XMLElement("received", namespace: XMLNamespace.receipts, ["id": "m1"])]),
            XMLElement("message", namespace: XMLNamespace.client, ["to": "bob@localhost"]),
        ]
        for message in messages {
            let once = message.serializedOnce(in: .clientStream)
            #expect(StoredStanza.serialize(once) == StoredStanza.serialize(message))
            #expect(StoredStanza.parse(StoredStanza.serialize(once)) == StoredStanza.parse(StoredStanza.serialize(message)))
        }
        // Serialized for another context, the kept bytes are not used.
        let server = XMLElement("message", namespace: "jabber:server", ["to": "bob@localhost"], [XMLElement("body", text: "hi")])
        #expect(StoredStanza.serialize(server.serializedOnce(in: .clientStream)) == StoredStanza.serialize(server))
    }
}
