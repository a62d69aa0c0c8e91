@testable import ParleyServer
import ParleyCore
import Testing

@Suite struct HeldEventsTests {
    static func stanza(_ id: String) -> XMLStreamEvent {
        .stanza(XMLElement("iq", namespace: XMLNamespace.client, ["id": id]))
    }

    @Test func keepsOrderAcrossPopsAndPushFront() {
        var held = HeldEvents()
        for id in ["a", "b", "c"] { held.append(Self.stanza(id)) }
        #expect(held.popFirst() == Self.stanza("a"))
        held.pushFront(Self.stanza("a2"))  // an event put back is handled next
        held.append(Self.stanza("d"))
        var rest: [XMLStreamEvent] = []
        while let event = held.popFirst() { rest.append(event) }
        #expect(rest == ["a2", "b", "c", "d"].map(Self.stanza))
        #expect(held.isEmpty && held.count == 0)
        held.pushFront(Self.stanza("e"))
        #expect(held.count == 1 && held.popFirst() == Self.stanza("e"))
    }
}
