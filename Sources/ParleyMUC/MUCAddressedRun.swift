import ParleyCore

/// Copies in a room's output whose addresses the room had at hand, `count` stanzas from
/// `start` on, so `MUCService.send` need not read each copy's `from` and `to` and parse (or
/// look up) them again. A room's big outputs are runs of this kind: a groupchat message or a
/// newcomer's presence to every session (one sender, many recipients), and every occupant's
/// presence to a newcomer (many senders, one recipient). Reading and looking the addresses
/// up was a quarter of the room's own work in a fill (bench/README.md, MUC, thirteenth round).
struct MUCAddressedRun: Sendable {
    enum Addresses: Sendable {
        /// From `from` to each of `to`, in order.
        case fanOut(from: JID, to: [JID])
        /// From each of `from`, in order, to `to`.
        case fanIn(from: [JID], to: JID)
    }

    /// Runs of fewer copies are not made: their address arrays (48 bytes a copy) would come
    /// from the heap of the thread running the room, amid the room's own records, and a room
    /// of 100 that filled with them seemed to keep ~0.3 KiB more per occupant resident (means
    /// of 10 and 14 runs; one run's spread is larger: bench/README.md, MUC, thirteenth round),
    /// where its 4 KiB line is. From this many copies on an
    /// array is 32 KiB, which the allocator maps and unmaps on its own (`MemoryTrimmer`), and
    /// the lookups it saves are most of a large room's fill.
    static let minimumCount = (32 << 10) / MemoryLayout<JID>.stride

    /// Index of the first copy in the output it was made for.
    var start: Int
    let addresses: Addresses

    var count: Int {
        switch addresses {
        case .fanOut(_, let to): to.count
        case .fanIn(let from, _): from.count
        }
    }

    var end: Int { start + count }

    /// The addresses of copy `start + offset`.
    func addresses(at offset: Int) -> (from: JID, to: JID) {
        switch addresses {
        case .fanOut(let from, let to): (from, to[offset])
        case .fanIn(let from, let to): (from[offset], to)
        }
    }

    /// The same run in an output that had `count` stanzas before this one's.
    func shifted(by count: Int) -> MUCAddressedRun {
        MUCAddressedRun(start: start + count, addresses: addresses)
    }
}
