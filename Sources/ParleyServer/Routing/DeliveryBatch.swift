import NIOCore

/// Deliveries to many sessions at once, such as a PEP notification to every contact. Each
/// session takes its delivery at once, exactly as `SessionHandle.deliver` would (so one that
/// is detached, ending or gone queues it or hands it on then); only the hop to the event loop
/// of an attached session waits for `submit()`, which makes one task per loop instead of one
/// per stanza: with hundreds of recipients, those tasks (and the flushes they schedule, each
/// its own task) were a large part of a notification's cost.
///
/// On its loop, the batch writes every session's stanzas first and flushes each session once
/// at the end, in the same task: a flush scheduled as a task of its own per session cost a
/// task, a closure and a lock on the loop's queue for every recipient.
///
/// The caller submits before it routes anything else, so nothing it sends later overtakes
/// what the batch holds, and the stanzas for one loop keep their order.
public final class DeliveryBatch {
    enum Work: Sendable {
        case closure(@Sendable () -> Void)
        case session(NIOLoopBound<C2SSessionHandler>, SessionDelivery)
    }

    private var groups: [(loop: any EventLoop, work: [Work])] = []

    public init() {}

    /// Whether nothing waits for `submit()`.
    public var isEmpty: Bool { groups.isEmpty }

    func add(on loop: any EventLoop, _ work: @escaping @Sendable () -> Void) {
        add(.closure(work), on: loop)
    }

    /// `delivery` for the handler attached to a session, written on the handler's loop.
    func add(_ delivery: SessionDelivery, for handler: NIOLoopBound<C2SSessionHandler>, on loop: any EventLoop) {
        add(.session(handler, delivery), on: loop)
    }

    private func add(_ work: Work, on loop: any EventLoop) {
        if let index = groups.firstIndex(where: { $0.loop === loop }) {
            groups[index].work.append(work)
        } else {
            groups.append((loop, [work]))
        }
    }

    public func submit() {
        let groups = self.groups
        self.groups = []
        for (loop, work) in groups {
            if loop.inEventLoop {
                Self.run(work)
            } else {
                loop.execute { Self.run(work) }
            }
        }
    }

    /// On the loop: every delivery, then one flush per session written to.
    private static func run(_ work: [Work]) {
        var written: [C2SSessionHandler] = []
        for item in work {
            switch item {
            case .closure(let body):
                body()
            case .session(let bound, let delivery):
                let handler = bound.value
                if !handler.flushDeferred {
                    handler.flushDeferred = true
                    written.append(handler)
                }
                handler.receive(delivery)
            }
        }
        for handler in written { handler.flushDeferredWrites() }
    }
}
