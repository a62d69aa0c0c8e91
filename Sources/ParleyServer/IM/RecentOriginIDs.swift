/// The last `capacity` (recipient, origin-id) pairs one account sent, as 64-bit hashes: at
/// most about 24 bytes a pair (a ring and a set of integers), whatever the ids' length.
/// Hashing uses the process's random seed, so a peer cannot aim for collisions; the chance
/// that two of a thousand different pairs collide is about one in 10^13.
struct RecentOriginIDs {
    let capacity: Int
    /// Oldest first until full; then `next` is the oldest.
    private var ring: [Int] = []
    private var next = 0
    private var members: Set<Int> = []

    init(capacity: Int) {
        self.capacity = capacity
    }

    static func key(recipient: String, originID: String) -> Int {
        var hasher = Hasher()
        hasher.combine(recipient)
        hasher.combine(originID)
        return hasher.finalize()
    }

    var count: Int { ring.count }

    /// Remembers `key`, forgetting the oldest beyond capacity; false if it was already known.
    mutating func insert(_ key: Int) -> Bool {
        guard capacity > 0 else { return true }
        guard members.insert(key).inserted else { return false }
        if ring.count < capacity {
            ring.append(key)
        } else {
            members.remove(ring[next])
            ring[next] = key
            next = (next + 1) % capacity
        }
        return true
    }

    func contains(_ key: Int) -> Bool {
        members.contains(key)
    }

    /// Oldest first, to replay into another memory.
    var keys: [Int] {
        Array(ring[next...] + ring[..<next])
    }
}
