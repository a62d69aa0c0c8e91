import ParleyCore
import Testing

@testable import ParleyServer

/// One bookmark in XEP-0048 and XEP-0402 form: converting either way and back gives the
/// same bookmark (what keeps the XEP-0411 mirror from rewriting what it just wrote).
@Suite struct BookmarkTests {
    static func element(_ xml: String) throws -> XMLElement {
        try #require(ProfileXML.parse(xml), "not XML: \(xml)")
    }

    @Test func aLegacyBookmarkSurvivesARoundTripThroughPEP() throws {
        let storage = try Self.element(
            "<storage xmlns='storage:bookmarks'><conference jid='Tea@Conference.localhost' autojoin='1' name='Tea'>"
                + "<nick>alice</nick><password>pw</password><x xmlns='urn:example:c' a='1'/></conference></storage>")
        let legacy = try #require(Bookmark.list(inLegacy: storage).first)
        #expect(legacy.jid == "tea@conference.localhost", "room JIDs are compared normalised")
        #expect(legacy.autojoin && legacy.name == "Tea" && legacy.nick == "alice" && legacy.password == "pw")
        #expect(legacy.extensions.map(\.name) == ["x"])

        let pep = try #require(Bookmark(jid: legacy.jid, pep: try Self.element(legacy.pepElement.xmlString())))
        #expect(pep == legacy)
        let back = try #require(Bookmark(legacy: try Self.element(pep.legacyElement.xmlString())))
        #expect(back == legacy)
    }

    @Test func defaultsAndBlanksCompareEqual() throws {
        let bare = try #require(Bookmark(legacy: try Self.element("<conference xmlns='storage:bookmarks' jid='r@c.localhost'/>")))
        let explicit = try #require(
            Bookmark(jid: "r@c.localhost", pep: try Self.element(
                "<conference xmlns='urn:xmpp:bookmarks:1' autojoin='false'><nick> </nick></conference>")))
        #expect(bare == explicit)
    }

    @Test func whatIsNotARoomBookmarkIsLeftOut() throws {
        let storage = try Self.element(
            "<storage xmlns='storage:bookmarks'><conference name='no jid'/><conference jid='a@b/c'/><conference jid='@@'/>"
                + "<url url='https://example.org/'/><conference jid='r@c.localhost' name='first'/>"
                + "<conference jid='r@c.localhost' name='second'/></storage>")
        let list = Bookmark.list(inLegacy: storage)
        #expect(list.map(\.jid) == ["r@c.localhost"] && list.first?.name == "second", "\(list)")
        #expect(Bookmark(jid: "r@c.localhost", pep: try Self.element("<other xmlns='urn:xmpp:bookmarks:1'/>")) == nil)
    }
}
