import Foundation
@testable import ParleyServer
import ParleyCore
import Testing

/// XEP-0352: which stanzas wake an inactive client (Prosody's mod_csi_simple rules), and the
/// held queue's order with one presence per full JID.
@Suite struct ClientStateQueueTests {
    private func parse(_ xml: String) throws -> XMLElement {
        try #require(StoredStanza.parse(xml), "not a stanza: \(xml)")
    }

    @Test(arguments: [
        ("<iq xmlns='jabber:client' type='get' id='1'><ping xmlns='urn:xmpp:ping'/></iq>", true),
        ("<presence xmlns='jabber:client' from='b@x/r'/>", false),
        ("<presence xmlns='jabber:client' from='b@x/r' type='unavailable'/>", false),
        ("<presence xmlns='jabber:client' from='b@x/r' type='error'><error type='cancel'/></presence>", true),
        ("<presence xmlns='jabber:client' from='b@x' type='subscribe'/>", true),
        ("<presence xmlns='jabber:client' from='b@x' type='unsubscribed'/>", true),
        ("<message xmlns='jabber:client' type='chat'><body>hi</body></message>", true),
        ("<message xmlns='jabber:client' type='headline'><body>news</body></message>", false),
        ("<message xmlns='jabber:client' type='error'><error type='cancel'/></message>", true),
        ("<message xmlns='jabber:client' type='chat'><composing xmlns='http://jabber.org/protocol/chatstates'/></message>", false),
        ("<message xmlns='jabber:client'><received xmlns='urn:xmpp:receipts' id='m1'/></message>", false),
        ("<message xmlns='jabber:client'><displayed xmlns='urn:xmpp:chat-markers:0' id='m1'/></message>", false),
        ("<message xmlns='jabber:client' type='groupchat'><subject>topic</subject></message>", true),
        ("<message xmlns='jabber:client'><encryption xmlns='urn:xmpp:eme:0' namespace='x'/></message>", true),
        ("<message xmlns='jabber:client'><x xmlns='jabber:x:conference' jid='room@muc'/></message>", true),
        ("<message xmlns='jabber:client'><propose xmlns='urn:xmpp:jingle-message:0' id='c'/></message>", true),
        (
            "<message xmlns='jabber:client'><sent xmlns='urn:xmpp:carbons:2'><forwarded xmlns='urn:xmpp:forward:0'>"
                + "<message xmlns='jabber:client'><active xmlns='http://jabber.org/protocol/chatstates'/></message></forwarded></sent></message>",
            true
        ),
        (
            "<message xmlns='jabber:client'><received xmlns='urn:xmpp:carbons:2'><forwarded xmlns='urn:xmpp:forward:0'>"
                + "<message xmlns='jabber:client'><body>hi</body></message></forwarded></received></message>",
            true
        ),
        (
            "<message xmlns='jabber:client'><received xmlns='urn:xmpp:carbons:2'><forwarded xmlns='urn:xmpp:forward:0'>"
                + "<message xmlns='jabber:client'><paused xmlns='http://jabber.org/protocol/chatstates'/></message></forwarded></received></message>",
            false
        ),
    ])
    func importance(xml: String, important: Bool) throws {
        #expect(ClientStateQueue.isImportant(try parse(xml)) == important, "\(xml)")
    }

    @Test func aNewerPresenceFromTheSameFullJIDTakesThePlaceOfTheOlder() throws {
        var queue = ClientStateQueue()
        queue.hold(try parse("<presence xmlns='jabber:client' from='b@x/one' id='p1'/>"))
        queue.hold(try parse("<presence xmlns='jabber:client' from='b@x/two' id='p2'/>"))
        queue.hold(try parse("<message xmlns='jabber:client' from='b@x/one' id='m1'/>"))
        queue.hold(try parse("<presence xmlns='jabber:client' from='b@x/one' id='p3' type='unavailable'/>"))
        #expect(queue.count == 3)
        #expect(queue.drain().map { $0.id } == ["p2", "m1", "p3"])
        #expect(queue.isEmpty && queue.drain().isEmpty)
        queue.hold(try parse("<presence xmlns='jabber:client' from='b@x/one' id='p4'/>"))
        #expect(queue.drain().map { $0.id } == ["p4"], "the index was reset with the queue")
    }

    @Test func heldStanzasAreStampedWithWhenTheyArrived() throws {
        var queue = ClientStateQueue()
        let date = Date(timeIntervalSince1970: 1_700_000_000)
        queue.hold(try parse("<presence xmlns='jabber:client' from='b@x/one' id='p1'/>"), stampedBy: "a@x", at: date)
        queue.hold(
            try parse("<message xmlns='jabber:client' id='m1'><delay xmlns='urn:xmpp:delay' from='a@x' stamp='2001-01-01T00:00:00Z'/></message>"),
            stampedBy: "a@x", at: date)
        let held = queue.drain()
        let delays = held.map { $0.children("delay", namespace: "urn:xmpp:delay") }
        #expect(delays[0].count == 1 && delays[0][0][attribute: "from"] == "a@x")
        #expect(delays[0][0][attribute: "stamp"] == "2023-11-14T22:13:20.000Z")
        #expect(delays[1].count == 1 && delays[1][0][attribute: "stamp"] == "2001-01-01T00:00:00Z", "one stamp per stamper")
    }
}
