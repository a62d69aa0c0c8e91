import ParleyCore
import Testing

@testable import ParleyServer

/// The cache of roster contacts' JIDs gives what parsing gives, for addresses seen before and
/// after it restarts past its bound, and nothing for a string that is no JID.
@Suite struct ContactJIDsTests {
    @Test func givesWhatParsingGivesAcrossRestarts() throws {
        let cache = ContactJIDs(maxEntries: 2)
        let contacts = ["juliet@capulet.lit", "romeo@montague.lit", "nurse@capulet.lit", "juliet@capulet.lit"]
        for contact in contacts + contacts {
            #expect(cache.jid(contact) == (try JID(contact)))
        }
        #expect(cache.jid("@capulet.lit") == nil)
        #expect(cache.jid("") == nil)
    }
}
