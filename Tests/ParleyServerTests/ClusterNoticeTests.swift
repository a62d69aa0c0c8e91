import ParleyCore
@testable import ParleyCluster
import ParleyServer
import Testing

/// The NOTIFY payloads nodes exchange: a directory entry survives the trip whatever its JID
/// and presence hold, one too large for NOTIFY is marked to be read from the table, and a
/// payload that is not one of ours is refused rather than half-applied.
@Suite struct ClusterNoticeTests {
    private func entry(jid: String, presence: String?, notify: Set<String> = []) -> SessionEntry {
        var entry = SessionEntry(
            jid: jid, node: "node-a", sessionID: 42, accountID: 7, version: 0, available: presence != nil, priority: -3, flags: 5,
            notify: "", presenceText: presence)
        entry.view.notifyNodes = notify
        return entry
    }

    @Test func aSessionEntryRoundTrips() throws {
        // A resource may hold '|' and spaces; a presence holds newlines and '|'.
        let presence = "<presence xmlns='jabber:client' from='bob@localhost/a|b c'><status>one\ntwo | three</status></presence>"
        let sent = entry(jid: "bob@localhost/a|b c", presence: presence, notify: ["urn:xmpp:avatar:metadata", "http://jabber.org/protocol/nick"])
        let payload = "s|99|" + ClusterNotice.sessionPayloadTail(sent)
        guard case .session(let got) = try #require(ClusterNotice.parse(payload)) else { throw ScenarioFailure("not a session notice") }
        #expect(got.jid == "bob@localhost/a|b c")
        #expect(got.node == "node-a")
        #expect(got.sessionID == 42)
        #expect(got.accountID == 7)
        #expect(got.version == 99)
        #expect(got.view.isAvailable)
        #expect(got.view.priority == -3)
        #expect(got.view.flags == [.carbons, .blocklistPushes])
        #expect(got.view.notifyNodes == ["urn:xmpp:avatar:metadata", "http://jabber.org/protocol/nick"])
        #expect(got.presenceText == presence)
        #expect(got.view.lastPresence?.firstChild("status")?.text == "one\ntwo | three")
        #expect(!got.presenceOmitted)
    }

    @Test func anUnavailableEntryWithoutAccountRoundTrips() throws {
        var sent = entry(jid: "carol@localhost/r", presence: nil)
        sent.accountID = nil
        guard case .session(let got) = try #require(ClusterNotice.parse("s|1|" + ClusterNotice.sessionPayloadTail(sent))) else {
            throw ScenarioFailure("not a session notice")
        }
        #expect(got.accountID == nil)
        #expect(!got.view.isAvailable)
        #expect(got.view.lastPresence == nil)
        #expect(got.view.notifyNodes.isEmpty)
    }

    @Test func aPresenceTooLargeForNotifyIsReadFromTheTable() throws {
        let big = "<presence xmlns='jabber:client'><status>" + String(repeating: "x", count: 9000) + "</status></presence>"
        let tail = ClusterNotice.sessionPayloadTail(entry(jid: "bob@localhost/r", presence: big))
        #expect(tail.utf8.count < ClusterNotice.maxPayload)
        guard case .session(let got) = try #require(ClusterNotice.parse("s|5|" + tail)) else { throw ScenarioFailure("not a session notice") }
        #expect(got.presenceOmitted)
        #expect(got.presenceText == nil)
    }

    @Test func theOtherNotices() {
        #expect(ClusterNotice.parse("e|node-b|17|bob@localhost/x|y") == .ended(node: "node-b", sessionID: 17, jid: "bob@localhost/x|y"))
        // A session handed over to another node (XEP-0198 resumption there) is not over.
        #expect(
            ClusterNotice.parse("m|node-b|17|bob@localhost/x") == .ended(node: "node-b", sessionID: 17, jid: "bob@localhost/x", moved: true))
        #expect(ClusterNotice.parse("x|node-b") == .nodeGone("node-b"))
        #expect(ClusterNotice.parse("i|node-c") == .inbox(node: "node-c"))
        #expect(ClusterNotice.parse("o|alice") == .offline(user: "alice"))
        #expect(ClusterNotice.parse("b|node-a|alice") == .blockList(node: "node-a", user: "alice"))
    }

    @Test func foreignPayloadsAreRefused() {
        for payload in ["", "s", "s|", "s|x|node|1||1|0|0|bob@localhost/r\n\n", "e|node|notanumber|jid", "z|what", "hello"] {
            #expect(ClusterNotice.parse(payload) == nil, "\(payload)")
        }
    }
}
