import ParleyCore
@testable import ParleyMUC
import ParleyServer
import Testing

/// The room's compact per-occupant storage: a list with its first element inline (an
/// occupant's sessions, a session's rooms), the occupant id kept as bytes, and the occupant's
/// kept presence (bench/README.md, MUC, seventh round). Each must behave as what it replaced.
@Suite struct MUCCompactStorageTests {
    static func jid(_ resource: String) -> JID { try! JID("alice@localhost/\(resource)") }

    @Test func anEmptyListHasNothing() {
        let list = MUCCompactList<JID>()
        #expect(list.isEmpty && list.count == 0 && list.first == nil)
        #expect(Array(list) == [])
        #expect(list == [])
        #expect(!list.contains(Self.jid("a")))
    }

    @Test func oneElementIsKeptInline() {
        var list: MUCCompactList<JID> = [Self.jid("a")]
        #expect(!list.isEmpty && list.count == 1 && list.first == Self.jid("a") && list[0] == Self.jid("a"))
        #expect(list.array == [Self.jid("a")])
        list.remove(Self.jid("b"))
        #expect(list.array == [Self.jid("a")])
        list.remove(Self.jid("a"))
        #expect(list.isEmpty && list.array == [] && list == [])
    }

    @Test func twoAndManyKeepTheirOrder() {
        var list = MUCCompactList<JID>()
        list.append(Self.jid("a"))
        list.append(Self.jid("b"))
        #expect(list.array == [Self.jid("a"), Self.jid("b")] && list.count == 2 && list[1] == Self.jid("b"))
        for name in ["c", "d", "e"] { list.append(Self.jid(name)) }
        #expect(list.map(\.resourcepart) == ["a", "b", "c", "d", "e"])
        #expect(list.contains(Self.jid("d")) && !list.contains(Self.jid("f")))
        #expect(list == MUCCompactList(["a", "b", "c", "d", "e"].map(Self.jid)))
        #expect(list != MUCCompactList(["a", "c", "b", "d", "e"].map(Self.jid)))
    }

    @Test func removingTheFirstMovesTheNextInline() {
        var list = MUCCompactList(["a", "b", "c"].map(Self.jid))
        list.remove(Self.jid("a"))
        #expect(list.map(\.resourcepart) == ["b", "c"] && list.first == Self.jid("b"))
        list.remove(Self.jid("c"))
        #expect(list.map(\.resourcepart) == ["b"])
        #expect(list == [Self.jid("b")], "a list of one is one whatever it held before")
        list.remove(Self.jid("b"))
        #expect(list.isEmpty)
        list.append(Self.jid("z"))
        #expect(list.map(\.resourcepart) == ["z"])
    }

    @Test func removingFromTheMiddleAndByPredicate() {
        var list = MUCCompactList(["a", "b", "c", "d"].map(Self.jid))
        list.remove(Self.jid("c"))
        #expect(list.map(\.resourcepart) == ["a", "b", "d"])
        list.removeAll { $0.resourcepart != "d" }
        #expect(list.map(\.resourcepart) == ["d"])
        list.removeAll { _ in true }
        #expect(list.isEmpty && list == [])
    }

    @Test func insertAddsOnlyWhatIsNotThereYet() {
        var rooms = MUCCompactList<String>()
        let inserted = [rooms.insert("hall"), rooms.insert("hall"), rooms.insert("kitchen"), rooms.insert("attic"), rooms.insert("kitchen")]
        #expect(inserted == [true, false, true, true, false])
        #expect(Array(rooms) == ["hall", "kitchen", "attic"])
        rooms.remove("hall")
        #expect(Array(rooms) == ["kitchen", "attic"])
    }

    @Test func theOccupantIDIsSpelledAsBefore() throws {
        let digest = try HashFunction.sha256.hmac(key: [1, 2, 3], data: Array("alice@localhost".utf8))
        let id = MUCOccupantID(digest: digest)
        #expect(id.text == Base64.encode(Array(digest.prefix(18))))
        #expect(id.text.count == 24)
        #expect(id.bytes == Array(digest.prefix(18)))
        #expect(MUCOccupantID(digest: digest) == id)
        #expect(MUCOccupantID(digest: Array(digest.reversed())) != id)
        #expect(MUCOccupantID(digest: []).text == "", "no digest, an empty id, as before")
    }

    @Test func anOccupantKeepsItsPresencePayloadsButNotTheEntryElement() throws {
        let entry = try #require(
            StoredStanza.parse(
                "<presence xmlns='jabber:client' to='hall@conference.localhost/Al'><x xmlns='http://jabber.org/protocol/muc'>"
                    + "<history maxstanzas='0'/><password>secret</password></x></presence>"))
        let occupant = MUCOccupant(
            nick: "Al", account: Self.jid("a").bare, sessions: [Self.jid("a")], role: .participant,
            id: MUCOccupantID(digest: [1, 2, 3]), presence: entry)
        #expect(occupant.presence.children.isEmpty, "\(occupant.presence.xmlString())")
        var away = occupant
        away.presence = try #require(
            StoredStanza.parse("<presence xmlns='jabber:client'><show>away</show><c xmlns='http://jabber.org/protocol/caps' ver='v'/></presence>"))
        #expect(away.presence.elements.map(\.name) == ["show", "c"])
        #expect(away.revision != occupant.revision, "a change makes a new revision")
    }

    @Test func sharedPresencesKeepEachContentOnceAndStartAfreshPastTheLimit() throws {
        var shared = MUCSharedPresences()
        func presence(_ status: String) -> XMLElement {
            XMLElement("presence", namespace: XMLNamespace.client, [:], [XMLElement("status", text: status)])
        }
        let first = shared.instance(of: presence("a"))
        #expect(shared.instance(of: presence("a")) == first && shared.count == 1)
        #expect(shared.instance(of: presence("b")).firstChild("status")?.text == "b" && shared.count == 2)
        for index in 0..<MUCSharedPresences.limit { _ = shared.instance(of: presence("s\(index)")) }
        #expect(shared.count <= MUCSharedPresences.limit)
        #expect(shared.instance(of: presence("a")) == presence("a"))
    }
}
