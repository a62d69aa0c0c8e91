import NIOCore
import NIOEmbedded
import ParleyCore
import ParleyStream
import Testing

/// Each stanza's output buffer is sized from the stanza before it is written, so writing it
/// never makes the buffer grow (a second allocation and a copy on every delivery).
@Suite struct EncoderBufferSizeTests {
    static func roomPresence() -> XMLElement {
        XMLElement(
            "presence", namespace: XMLNamespace.client, ["from": "bench1000@conference.localhost/o123"],
            [
                XMLElement(
                    "x", namespace: "http://jabber.org/protocol/muc#user", [:],
                    [XMLElement("item", ["affiliation": "none", "role": "participant"])]),
                XMLElement("occupant-id", namespace: "urn:xmpp:occupant-id:0", ["id": String(repeating: "A", count: 44)]),
            ])
    }

    @Test func aTemplatedStanzasBufferDoesNotGrow() throws {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(XMLStreamEncoder())
        let template = XMLStanzaTemplate(Self.roomPresence(), context: .clientStream)
        channel.write(XMLStreamOutput.element(template.instance([XMLAttribute("to", "user123@localhost/bench")])), promise: nil)
        channel.flush()
        let buffer = try #require(try channel.readOutbound(as: ByteBuffer.self))
        #expect(buffer.capacity < 2 * max(512, buffer.readableBytes))
    }
}
