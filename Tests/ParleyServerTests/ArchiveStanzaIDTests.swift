import Foundation
import ParleyCore
@testable import ParleyServer
import ParleyStorage
import Testing

/// The archive's stanza-ids and the text it stores for each archive copy.
@Suite struct ArchiveStanzaIDTests {
    @Test func idsAreTimeOrderedVersion7UUIDs() throws {
        let earlier = TimeOrderedUUID.make(now: Date(timeIntervalSince1970: 1_764_000_000.001))
        let later = TimeOrderedUUID.make(now: Date(timeIntervalSince1970: 1_764_000_000.002))
        for id in [earlier, later] {
            let uuid = try #require(UUID(uuidString: id))
            #expect(uuid.uuidString.lowercased() == id)
            let bytes = Array(id.utf8)
            #expect(bytes[14] == UInt8(ascii: "7"))  // version
            #expect([UInt8](Array("89ab".utf8)).contains(bytes[19]))  // RFC 9562 variant
        }
        #expect(earlier < later)
        // 1,764,000,000,001 ms (0x019ab697e801) in the first 48 bits.
        #expect(earlier.hasPrefix("019ab697-e801-7") && later.hasPrefix("019ab697-e802-7"))
        // Made in the same millisecond, ids still differ: the rest is random.
        let now = Date()
        #expect(Set((1...100).map { _ in TimeOrderedUUID.make(now: now) }).count == 100)
    }

    /// Both archives store the message without a stanza-id; a query gives each owner's copy
    /// its own, last, as routing did; a message stored with it (archived before) keeps it.
    @Test func aQueryGivesTheStoredMessageItsOwnersStanzaID() throws {
        var message = XMLElement(
            "message", namespace: XMLNamespace.client, ["to": "bob@localhost", "type": "chat", "id": "m1"],
            [XMLElement("body", text: "n°1 <&> 'quoted' \"twice\"")])
        message.append(XMLElement("origin-id", namespace: XMLNamespace.stanzaID, ["id": "o1"]))
        let text = StoredStanza.serialize(message)
        for by in ["alice@localhost", "bob@localhost"] {
            let stanzaID = XMLElement("stanza-id", namespace: XMLNamespace.stanzaID, ["id": "0190-x&y", "by": by])
            var whole = message
            whole.append(stanzaID)
            for stored in [text, StoredStanza.serialize(whole)] {
                let archived = ArchivedMessage(
                    position: 1, stanzaID: "0190-x&y", originID: "o1", from: "alice@localhost/a", to: "bob@localhost",
                    stanza: stored, archivedAt: Date(), retractedAt: nil)
                #expect(ArchiveModule.archivedStanza(archived, owner: by) == StoredStanza.parse(StoredStanza.serialize(whole)))
            }
        }
    }
}
