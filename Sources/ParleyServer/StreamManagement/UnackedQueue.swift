import NIOCore

/// XEP-0198 §4 outbound counting: every stanza sent after `<enable/>` gets the next sequence
/// number (mod 2^32) and stays here until the client's `<a h='…'/>` covers it. `h` values
/// are compared modulo 2^32, so counting goes on across the wrap.
struct UnackedQueue<Item> {
    /// Sequence number of the last stanza sent (the server's send count).
    private(set) var sent: UInt32
    /// The highest `h` the client acknowledged.
    private(set) var acknowledged: UInt32
    /// Starts at one slot (NIO's default is sixteen, allocated at once) and goes back to one
    /// whenever everything is acknowledged: an idle session keeps no ring grown by a burst.
    private var items = CircularBuffer<Item>(initialCapacity: 1)

    /// `start` is the count both sides agree on at the beginning (0, or anything in tests).
    init(startingAt start: UInt32 = 0) {
        sent = start
        acknowledged = start
    }

    var count: Int { items.count }
    var isEmpty: Bool { items.isEmpty }
    /// Slots of the ring, filled or not (tests).
    var capacity: Int { items.capacity }
    /// Unacknowledged items, oldest first.
    var pending: [Item] { Array(items) }

    /// Records a sent stanza; returns its sequence number.
    @discardableResult
    mutating func append(_ item: Item) -> UInt32 {
        sent &+= 1
        items.append(item)
        return sent
    }

    enum AckError: Error, Equatable {
        /// `h` acknowledges stanzas never sent (XEP-0198 `<handled-count-too-high/>`).
        case handledCountTooHigh(h: UInt32, sendCount: UInt32)
    }

    /// Releases everything up to `h`, returning what was released, oldest first.
    mutating func acknowledge(_ h: UInt32) throws(AckError) -> [Item] {
        try release(upTo: h).get()
    }

    mutating func release(upTo h: UInt32) -> Result<[Item], AckError> {
        let newly = h &- acknowledged
        guard newly <= UInt32(items.count) else { return .failure(.handledCountTooHigh(h: h, sendCount: sent)) }
        var released: [Item] = []
        released.reserveCapacity(Int(newly))
        for _ in 0..<newly { released.append(items.removeFirst()) }
        if items.isEmpty, items.capacity > 1 { items = CircularBuffer(initialCapacity: 1) }
        acknowledged = h
        return .success(released)
    }

    /// Empties the queue (the session ended), returning what was never acknowledged.
    mutating func removeAll() -> [Item] {
        let all = Array(items)
        items.removeAll()
        acknowledged = sent
        return all
    }
}

extension UnackedQueue: Sendable where Item: Sendable {}
