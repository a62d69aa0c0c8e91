import Foundation
import ParleyCore
@testable import ParleyServer
import ParleyStorage
import Testing

/// The archive's stanza-ids and the text it stores for each archive copy.
@Suite struct ArchiveStanzaIDTests {
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
