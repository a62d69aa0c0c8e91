import NIOConcurrencyHelpers
import NIOCore

/// Something that waits for a deadline on its event loop's `LoopTimers`.
public protocol LoopTimed: AnyObject {
    /// Where the entry sits in its `LoopTimers`; -1 when it has none. Only `LoopTimers` sets it.
    var loopTimerSlot: Int { get set }
    /// Called on the loop once the deadline passed; the entry is gone by then.
    func deadlinePassed(now: NIODeadline)
}

/// One timer per event loop for the deadlines of every connection on it (keepalives, idle
/// timeouts, the decoder's memory release), instead of a scheduled task per connection.
///
/// A NIO scheduled task costs a few hundred bytes (the task, its closure, the promise of its
/// `Scheduled`, its slot in the loop's heap), and cancelling one searches the loop's whole
/// heap: with 50,000 idle connections on a loop, each login that cancels a timer, and each
/// close, scanned 50,000 entries. Here an entry is a slot in an array (added, moved and
/// removed in O(1)); one task wakes at the earliest deadline, at most every `minimumGap`,
/// and runs every entry that is due. Finding the earliest is a scan of the array, which
/// costs a few nanoseconds per connection once per wake-up.
///
/// Touched on its loop only; the registry of instances is behind a lock.
public final class LoopTimers: @unchecked Sendable {
    private struct Entry {
        let client: any LoopTimed
        var deadline: NIODeadline
    }

    /// Wake-ups closer together than this are merged (the later deadlines run late by at most
    /// this much), so thousands of nearby deadlines cost one scan, not thousands.
    public static let minimumGap = TimeAmount.milliseconds(50)

    private static let registry = NIOLockedValueBox<[ObjectIdentifier: LoopTimers]>([:])

    private let loop: any EventLoop
    private var entries: [Entry] = []
    private var tick: Scheduled<Void>?
    private var tickDeadline: NIODeadline?
    private var lastTick = NIODeadline.uptimeNanoseconds(0)
    private var ticking = false

    private init(loop: any EventLoop) {
        self.loop = loop
    }

    /// The instance for `loop`; call on that loop.
    public static func on(_ loop: any EventLoop) -> LoopTimers {
        registry.withLockedValue { registry in
            if let timers = registry[ObjectIdentifier(loop)] { return timers }
            let timers = LoopTimers(loop: loop)
            registry[ObjectIdentifier(loop)] = timers
            return timers
        }
    }

    /// Entries waiting on this loop (for tests and metrics).
    public var count: Int { entries.count }

    /// Sets `client`'s deadline, replacing any it had.
    public func schedule(_ client: some LoopTimed, at deadline: NIODeadline) {
        let slot = client.loopTimerSlot
        if slot >= 0, slot < entries.count, entries[slot].client === client {
            entries[slot].deadline = deadline
        } else {
            client.loopTimerSlot = entries.count
            entries.append(Entry(client: client, deadline: deadline))
        }
        if !ticking { armTick(for: deadline) }
    }

    /// Removes `client`'s deadline, if it has one.
    public func cancel(_ client: some LoopTimed) {
        let slot = client.loopTimerSlot
        guard slot >= 0, slot < entries.count, entries[slot].client === client else { return }
        remove(at: slot)
        if entries.isEmpty, !ticking { retire() }
    }

    private func remove(at slot: Int) {
        entries[slot].client.loopTimerSlot = -1
        let last = entries.count - 1
        if slot != last {
            entries.swapAt(slot, last)
            entries[slot].client.loopTimerSlot = slot
        }
        entries.removeLast()
        // An array that once held a burst of connections should not keep that capacity.
        if entries.isEmpty { entries = [] }
    }

    private func armTick(for deadline: NIODeadline) {
        let at = max(deadline, lastTick + Self.minimumGap)
        if let tickDeadline, tickDeadline <= at { return }
        tick?.cancel()
        tickDeadline = at
        tick = loop.scheduleTask(deadline: at) { [self] in runTick() }
    }

    private func runTick() {
        tick = nil
        tickDeadline = nil
        let now = loop.now
        lastTick = now
        var due: [any LoopTimed] = []
        var slot = 0
        while slot < entries.count {
            if entries[slot].deadline <= now {
                due.append(entries[slot].client)
                remove(at: slot)
            } else {
                slot += 1
            }
        }
        ticking = true
        for client in due {
            // An earlier one may have ended it (a close) or given it a new deadline already.
            guard client.loopTimerSlot < 0 else { continue }
            client.deadlinePassed(now: now)
        }
        ticking = false
        if let earliest = entries.lazy.map(\.deadline).min() {
            armTick(for: earliest)
        } else {
            retire()
        }
    }

    /// Leaves the registry when nothing waits, so loops that come and go (tests) leave nothing
    /// behind; the next `on(_:)` makes a new instance.
    private func retire() {
        tick?.cancel()
        tick = nil
        tickDeadline = nil
        let key = ObjectIdentifier(loop)
        Self.registry.withLockedValue { registry in
            if registry[key] === self { registry[key] = nil }
        }
    }
}
