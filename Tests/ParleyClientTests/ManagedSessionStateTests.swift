@testable import ParleyClient
import ParleyCore
import Testing

/// The client's side of XEP-0198 counting: what an `<a h/>` acknowledges.
@Suite struct ManagedSessionStateTests {
    func state() throws -> ManagedSessionState {
        ManagedSessionState(resumptionID: "r1", jid: try JID("alice@localhost/phone"), counter: HandledCounter())
    }

    func message(_ n: Int) -> XMLElement {
        XMLElement("message", namespace: XMLNamespace.client, ["id": "m\(n)"])
    }

    @Test func anAcknowledgementReleasesTheOldestStanzasInOrder() throws {
        var session = try state()
        for n in 1...5 { session.sent(message(n)) }
        #expect(try session.acknowledge(2).map(\.id) == ["m1", "m2"])
        #expect(session.unacknowledged.map(\.id) == ["m3", "m4", "m5"])
        #expect(try session.acknowledge(2).isEmpty, "a repeated h acknowledges nothing new")
        #expect(try session.acknowledge(5).map(\.id) == ["m3", "m4", "m5"])
        #expect(session.unacknowledged.isEmpty)
    }

    @Test func theCountWrapsAtTwoToTheThirtyTwo() throws {
        // 2^32 - 2 stanzas were acknowledged already; three more take the count past the wrap.
        var session = ManagedSessionState(
            resumptionID: "r1", jid: try JID("alice@localhost/phone"), counter: HandledCounter(), acknowledged: UInt32.max - 1)
        for n in 1...3 { session.sent(message(n)) }
        #expect(try session.acknowledge(UInt32.max).map(\.id) == ["m1"])
        #expect(try session.acknowledge(1).map(\.id) == ["m2", "m3"], "h = 1 after the wrap is two more")
        #expect(session.acknowledged == 1)
        #expect(throws: ManagedSessionState.AcknowledgementError.tooHigh(h: 2, sent: 1)) { try session.acknowledge(2) }
    }

    @Test func anAcknowledgementOfMoreThanWasSentIsRefused() throws {
        var session = try state()
        session.sent(message(1))
        #expect(throws: ManagedSessionState.AcknowledgementError.tooHigh(h: 2, sent: 1)) { try session.acknowledge(2) }
        #expect(session.unacknowledged.count == 1, "nothing is dropped on a bad count")
    }
}
