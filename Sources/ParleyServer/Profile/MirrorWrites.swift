import NIOConcurrencyHelpers

/// The PEP writes a mirror (XEP-0398, XEP-0411) is making right now, by account, node and
/// item. PEP announces each change synchronously while the write is under way, so an event
/// for a key in here is the mirror's own echo, not a client's change. Copying the echo back
/// would be harmless only if nothing changed since: a client that writes its vCard (or its
/// private bookmarks) again right after would have the mirror's older state written over it.
final class MirrorWrites: Sendable {
    struct Key: Hashable, Sendable {
        var username: String
        var node: String
        var itemID: String
    }

    private let inFlight = NIOLockedValueBox(Set<Key>())

    func during<T>(_ key: Key, _ write: () async throws -> T) async rethrows -> T {
        inFlight.withLockedValue { _ = $0.insert(key) }
        defer { inFlight.withLockedValue { _ = $0.remove(key) } }
        return try await write()
    }

    func isOwn(_ key: Key) -> Bool {
        inFlight.withLockedValue { $0.contains(key) }
    }
}
