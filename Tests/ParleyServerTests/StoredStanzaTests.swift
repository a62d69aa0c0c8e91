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
}
