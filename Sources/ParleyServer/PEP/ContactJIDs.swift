import NIOConcurrencyHelpers
import ParleyCore

/// Roster contacts' addresses as JIDs, kept once parsed: every publish walks the owner's whole
/// roster, and preparing each contact's JID again (case folding, normalisation) cost more
/// than the rest of choosing the recipients. A roster stores its contacts in canonical form,
/// so the same string always gives the same JID; the cache only bounds its size (a JID is at
/// most about 3 KB, so at most some 60 MB, and typically a few hundred KB: contacts are
/// mostly the server's own accounts, shared by every roster).
final class ContactJIDs: Sendable {
    private let cache = NIOLockedValueBox([String: JID]())
    let maxEntries: Int

    init(maxEntries: Int = 20_000) {
        self.maxEntries = maxEntries
    }

    /// The JID `contact` names, or nil if it names none.
    func jid(_ contact: String) -> JID? {
        if let known = cache.withLockedValue({ $0[contact] }) { return known }
        guard let jid = try? JID(contact) else { return nil }
        cache.withLockedValue { cache in
            if cache.count >= maxEntries { cache = [:] }
            cache[contact] = jid
        }
        return jid
    }
}
