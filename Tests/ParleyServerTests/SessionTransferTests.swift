import ParleyCore
@testable import ParleyCluster
@testable import ParleyServer
import Testing

/// What one node hands another when a client resumes there (XEP-0198 across the cluster),
/// and the directed presence a directory entry carries: both survive their trip as text.
@Suite struct SessionTransferTests {
    @Test func aTransferRoundTripsThroughText() throws {
        var presence = SessionPresence()
        presence.isAvailable = true
        presence.priority = -2
        presence.wantsCarbons = true
        presence.wantsRosterPushes = true
        presence.unavailableStatus = "brb | back\nsoon"
        presence.lastPresence = StoredStanza.parse("<presence xmlns='jabber:client' from='alice@localhost/phone'><show>away</show></presence>")
        presence.directedPresence = [try JID("room@conference.localhost/alice"), try JID("bob@localhost/desk")]
        presence.notifyNodes = ["urn:xmpp:avatar:metadata"]
        let queued = [
            StoredStanza.parse("<message xmlns='jabber:client' to='alice@localhost/phone' id='m1'><body>a &amp; b</body></message>")!,
            StoredStanza.parse("<iq xmlns='jabber:client' type='get' id='q'><ping xmlns='urn:xmpp:ping'/></iq>")!,
        ]
        let sent = SessionTransfer(
            jid: try JID("alice@localhost/phone"), resumptionID: "abc", inbound: 7, acknowledged: UInt32.max - 1, queue: queued,
            resumeTimeoutSeconds: 300, maxUnacked: 500, presence: presence)
        let text = StoredStanza.serialize(sent.element)
        let got = try #require(StoredStanza.parse(text).flatMap(SessionTransfer.init))
        #expect(got == sent)
        #expect(got.queue.first?.namespace == XMLNamespace.client)
        #expect(got.presence.lastPresence?.firstChild("show")?.text == "away")
    }

    @Test func somethingElseIsNoTransfer() throws {
        #expect(SessionTransfer(StoredStanza.parse("<message xmlns='jabber:client'/>")!) == nil)
        let noQueue = "<session xmlns='\(SessionTransfer.namespace)' jid='a@localhost/r' id='x' h='1' acknowledged='0' timeout='1' max-unacked='5'/>"
        #expect(StoredStanza.parse(noQueue).flatMap(SessionTransfer.init) == nil)
        let bareJID = "<session xmlns='\(SessionTransfer.namespace)' jid='a@localhost' id='x' h='1' acknowledged='0' timeout='1' max-unacked='5'><presence-state/><queue/></session>"
        #expect(StoredStanza.parse(bareJID).flatMap(SessionTransfer.init) == nil)
    }

    @Test func aDirectoryEntryCarriesDirectedPresence() throws {
        var entry = SessionEntry(
            jid: "bob@localhost/r", node: "node-a", sessionID: 1, accountID: 2, version: 0, available: true, priority: 0, flags: 0,
            notify: "", presenceText: nil)
        entry.view.notifyNodes = ["urn:xmpp:avatar:metadata"]
        entry.view.directedPresence = [try JID("carol@localhost/r"), try JID("room@conference.localhost/bob")]
        let payload = "s|5|" + ClusterNotice.sessionPayloadTail(entry)
        guard case .session(let got) = try #require(ClusterNotice.parse(payload)) else { throw ScenarioFailure("not a session notice") }
        #expect(got.view.directedPresence == entry.view.directedPresence)
        #expect(got.view.notifyNodes == ["urn:xmpp:avatar:metadata"])
        // Without directed presence the stored field is what it always was.
        entry.view.directedPresence = []
        #expect(entry.notifyText == "urn:xmpp:avatar:metadata")
    }
}
