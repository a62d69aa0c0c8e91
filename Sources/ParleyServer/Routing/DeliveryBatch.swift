import NIOCore

/// Deliveries to many sessions at once, such as a PEP notification to every contact. Each
/// session takes its delivery at once, exactly as `SessionHandle.deliver` would (so one that
/// is detached, ending or gone queues it or hands it on then); only the hop to the event loop
/// of an attached session waits for `submit()`, which makes one task per loop instead of one
/// per stanza: with hundreds of recipients, those tasks (and the flushes they schedule, each
/// its own task) were a large part of a notification's cost.
///
/// On its loop, the batch writes each session's stanzas and flushes the session once, after
/// its last one, in the same task: a flush scheduled as a task of its own per session cost a
/// task, a closure and a lock on the loop's queue for every recipient.
///
/// The caller submits before it routes anything else, so nothing it sends later overtakes
/// what the batch holds, and the stanzas for one loop keep their order. Deliveries that
/// `BoundSession.dispatch` made hop (to another loop, or to this one behind an earlier hop
/// to the same session) go as a task even to the submitting thread's own loop.
public final class DeliveryBatch {
    enum Work: Sendable {
        case closure(@Sendable () -> Void)
        /// The handler's identity is kept beside it: reading it through the loop-bound box
        /// checks the loop each time.
        case session(NIOLoopBound<C2SSessionHandler>, ObjectIdentifier, SessionDelivery)
    }

    /// Per loop, what is written there at once on submit (if that is this thread's loop)
    /// and what must wait for the loop's queue, apart.
    private var groups: [(loop: any EventLoop, hopped: Bool, work: [Work])] = []
    /// The group the last addition went to: a fan-out adds to the same loop many times in a
    /// row. Checked against the loop before use, so it may be stale (past the end after a
    /// submit).
    private var lastGroup = 0

    public init() {}

    /// Whether nothing waits for `submit()`.
    public var isEmpty: Bool { groups.isEmpty }

    func add(on loop: any EventLoop, _ work: @escaping @Sendable () -> Void) {
        add(.closure(work), on: loop, hopped: false)
    }

    /// `delivery` for the handler attached to a session, written on the handler's loop;
    /// `hopped` as `BoundSession.dispatch` counted it.
    func add(
        _ delivery: SessionDelivery, for handler: NIOLoopBound<C2SSessionHandler>, id: ObjectIdentifier, on loop: any EventLoop,
        hopped: Bool
    ) {
        add(.session(handler, id, delivery), on: loop, hopped: hopped)
    }

    private func add(_ work: Work, on loop: any EventLoop, hopped: Bool) {
        if lastGroup < groups.count, groups[lastGroup].loop === loop, groups[lastGroup].hopped == hopped {
            groups[lastGroup].work.append(work)
        } else if let index = groups.firstIndex(where: { $0.loop === loop && $0.hopped == hopped }) {
            lastGroup = index
            groups[index].work.append(work)
        } else {
            lastGroup = groups.count
            groups.append((loop, hopped, [work]))
        }
    }

    public func submit() {
        let groups = self.groups
        self.groups = []
        // The other loops get their share before this one writes its own: run first, this
        // loop's half of a room's fan-out held the other half back for as long as it took
        // (a hundred copies written one after another instead of two halves side by side).
        var local: [Work]?
        for (loop, hopped, work) in groups {
            if !hopped, loop.inEventLoop {
                local = work
            } else {
                loop.execute { Self.run(work, hopped: hopped) }
            }
        }
        if let local { Self.run(local, hopped: false) }
    }

    /// On the loop: every delivery in order, each session flushed once, right after its last
    /// stanza in the work. A room's message is one stanza per session, so each copy leaves as
    /// soon as it is written instead of after every other session's; several messages
    /// gathered in one batch (a busy room) still cost each session one flush.
    ///
    /// The work is read where it lies: iterating it by value copied every item (its handler
    /// and its stanza retained and released), twice, for each copy of a room's message.
    private static func run(_ work: [Work], hopped: Bool) {
        var lastStanza: [ObjectIdentifier: Int] = [:]
        work.withUnsafeBufferPointer { work in
            if work.count > 1 {
                lastStanza.reserveCapacity(work.count)
                for index in work.indices {
                    if case .session(_, let id, _) = work[index] { lastStanza[id] = index }
                }
            }
            for index in work.indices {
                switch work[index] {
                case .closure(let body):
                    body()
                case .session(let bound, let id, let delivery):
                    let handler = bound.value
                    handler.flushDeferred = true
                    handler.receive(delivery, hopped: hopped)
                    if work.count == 1 || lastStanza[id] == index { handler.flushDeferredWrites() }
                }
            }
        }
    }
}
