import Synchronization

/// The domains a server is, kept as one String each that every JID parsed or built with
/// one of them shares. A domainpart of more than 15 bytes (`conference.example.org`) is a
/// heap block of its own in each JID that holds it: a room's occupants' addresses, each
/// session's directed presence to the room, the router's and the room's tables had one
/// each, made while the room filled and left behind among the fill's garbage (bench/README.md,
/// MUC memory, seventh round). Shorter ones are stored inline by String and need nothing.
extension JID {
    /// Makes every JID with `domain` (a domainpart: the server's domain, a hosted service's)
    /// share one copy of it from now on. Meant for start-up; a domain that is no valid
    /// domainpart, or one already shared, is left as it is. At most 32 are kept.
    public static func shareDomain(_ domain: String) {
        guard let prepared = try? JIDPreparation.domainpart(domain), prepared.utf8.count > SharedDomains.inlineBytes else { return }
        SharedDomains.add(prepared)
    }

    /// The shared copy of `domain` if it is one of them, else `domain`.
    static func shared(_ domain: String) -> String {
        guard domain.utf8.count > SharedDomains.inlineBytes else { return domain }
        return SharedDomains.match(domain.utf8) ?? domain
    }

    /// The shared copy of `domain` if it is one of them, byte for byte (so already
    /// prepared): parsing then skips the preparation of the domainpart and its copy.
    static func shared(_ domain: Substring) -> String? {
        guard domain.utf8.count > SharedDomains.inlineBytes else { return nil }
        return SharedDomains.match(domain.utf8)
    }
}

/// Written rarely (under a lock), read on every parse without one: a fixed array of slots,
/// each written once before the count that publishes it.
private enum SharedDomains {
    /// Swift keeps strings of up to 15 UTF-8 bytes inline.
    static let inlineBytes = 15
    static let capacity = 32
    nonisolated(unsafe) static let slots = UnsafeMutablePointer<String>.allocate(capacity: capacity)
    static let published = Atomic<Int>(0)
    static let writer = Mutex(())

    static func add(_ domain: String) {
        writer.withLock { _ in
            let count = published.load(ordering: .relaxed)
            guard count < capacity, !(0..<count).contains(where: { slots[$0] == domain }) else { return }
            (slots + count).initialize(to: domain)
            published.store(count + 1, ordering: .releasing)
        }
    }

    static func match<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String? {
        let count = published.load(ordering: .acquiring)
        for index in 0..<count {
            let domain = slots[index]
            if domain.utf8.count == bytes.count, domain.utf8.elementsEqual(bytes) { return domain }
        }
        return nil
    }
}
