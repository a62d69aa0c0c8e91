import NIOCore

/// Deliveries to many sessions at once, such as a PEP notification to every contact. Each
/// session takes its delivery at once, exactly as `SessionHandle.deliver` would (so one that
/// is detached, ending or gone queues it or hands it on then); only the hop to the event loop
/// of an attached session waits for `submit()`, which makes one task per loop instead of one
/// per stanza: with hundreds of recipients, those tasks (and the flushes they schedule, each
/// its own task) were a large part of a notification's cost.
///
/// On its loop, the batch writes each session's stanzas and flushes each session once. A
/// small batch (a quiet room's message: a few sessions per loop) leaves its flushes to the
/// loop's `LoopFlushes`, one task that flushes every session the batches before it wrote to:
/// in a busy small room each session then pays one `write(2)` for several messages instead
/// of one per message. A large batch flushes each session right after its last stanza: its
/// first copies leave while the others are still being written (deferred, a room of 100's
/// copies at 20 messages/s waited for all 50 of their loop's to be written first; p50 up to
/// 0.26 ms later). A flush as a task of its own per session cost a task, a closure and a lock
/// on the loop's queue for every recipient.
///
/// The caller submits before it routes anything else, so nothing it sends later overtakes
/// what the batch holds, and the stanzas for one loop keep their order.
public final class DeliveryBatch {
    enum Work: Sendable {
        case closure(@Sendable () -> Void)
        /// The handler's identity is kept beside it: reading it through the loop-bound box
        /// checks the loop each time.
        case session(NIOLoopBound<C2SSessionHandler>, ObjectIdentifier, SessionDelivery)
    }

    private var groups: [(loop: any EventLoop, work: [Work])] = []
    /// The group the last addition went to: a fan-out adds to the same loop many times in a
    /// row. Checked against the loop before use, so it may be stale (past the end after a
    /// submit).
    public init() {}

    /// Whether nothing waits for `submit()`.
    public var isEmpty: Bool { groups.isEmpty }

    func add(on loop: any EventLoop, _ work: @escaping @Sendable () -> Void) {
        add(.closure(work), on: loop)
    }

    /// `delivery` for the handler attached to a session, written on the handler's loop.
    func add(_ delivery: SessionDelivery, for handler: NIOLoopBound<C2SSessionHandler>, id: ObjectIdentifier, on loop: any EventLoop) {
        add(.session(handler, id, delivery), on: loop)
    }

    private func add(_ work: Work, on loop: any EventLoop) {
        if lastGroup < groups.count, groups[lastGroup].loop === loop {
            groups[lastGroup].work.append(work)
        } else if let index = groups.firstIndex(where: { $0.loop === loop }) {
            lastGroup = index
            groups[index].work.append(work)
        } else {
            lastGroup = groups.count
            groups.append((loop, [work]))
        }
    }

    private var lastGroup = 0

    public func submit() {
        let groups = self.groups
        self.groups = []
        // The other loops get their share before this one writes its own: run first, this
        // loop's half of a room's fan-out held the other half back for as long as it took
        // (a hundred copies written one after another instead of two halves side by side).
        var local: (loop: any EventLoop, work: [Work])?
        for (loop, work) in groups {
            if loop.inEventLoop {
                local = (loop, work)
            } else {
                loop.execute { Self.run(work, on: loop) }
            }
        }
        if let local { Self.run(local.work, on: local.loop) }
    }

    /// Batches of at most this many stanzas for one loop leave their flushes to `LoopFlushes`.
    static let deferredFlushLimit = 16

    /// On the loop: every delivery in order, each session flushed once (see the type).
    ///
    /// The work is read where it lies: iterating it by value copied every item (its handler
    /// and its stanza retained and released), twice, for each copy of a room's message.
    private static func run(_ work: [Work], on loop: any EventLoop) {
        work.withUnsafeBufferPointer { work in
            if work.count <= deferredFlushLimit {
                var flushes: LoopFlushes?
                for index in work.indices {
                    switch work[index] {
                    case .closure(let body):
                        body()
                    case .session(let bound, _, let delivery):
                        let handler = bound.value
                        // Already waiting for the task if an earlier batch wrote to it.
                        let waiting = handler.flushDeferred
                        handler.flushDeferred = true
                        handler.receive(delivery)
                        if !waiting {
                            if flushes == nil { flushes = LoopFlushes.onThisThread }
                            flushes!.add(handler, on: loop)
                        }
                    }
                }
                return
            }
            var lastStanza: [ObjectIdentifier: Int] = [:]
            lastStanza.reserveCapacity(work.count)
            for index in work.indices {
                if case .session(_, let id, _) = work[index] { lastStanza[id] = index }
            }
            for index in work.indices {
                switch work[index] {
                case .closure(let body):
                    body()
                case .session(let bound, let id, let delivery):
                    let handler = bound.value
                    handler.flushDeferred = true
                    handler.receive(delivery)
                    // A session an earlier small batch deferred is flushed here as well; the
                    // task finds nothing owed.
                    if lastStanza[id] == index { handler.flushDeferredWrites() }
                }
            }
        }
    }
}
