import NIOCore

/// Deliveries to many sessions at once, such as a PEP notification to every contact. Each
/// session takes its delivery at once, exactly as `SessionHandle.deliver` would (so one that
/// is detached, ending or gone queues it or hands it on then); only the hop to the event loop
/// of an attached session waits for `submit()`, which makes one task per loop instead of one
/// per stanza: with hundreds of recipients, those tasks (and the flushes they schedule, each
/// its own task) were a large part of a notification's cost.
///
/// On its loop, the batch writes every session's stanzas first and flushes each session once,
/// in one task for all of them queued behind whatever the loop has to do already: a flush
/// scheduled as a task of its own per session cost a task, a closure and a lock on the loop's
/// queue for every recipient. Batches that were waiting for the loop together (a room
/// filling: each newcomer's presence to every occupant is a batch, and the loops fall
/// behind) are flushed together, so a session gets one output buffer and one write for
/// all of them instead of one each (bench/README.md, MUC memory, seventh round).
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
                Self.run(work, on: loop)
            } else {
                loop.execute { Self.run(work, on: loop) }
            }
        }
    }

    /// On the loop: every delivery, then one flush per session written to, after what the
    /// loop had queued meanwhile (a session stays deferred until then, so later batches'
    /// deliveries to it join the same flush).
    private static func run(_ work: [Work], on loop: any EventLoop) {
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
        guard !written.isEmpty else { return }
        let flushes = NIOLoopBound(written, eventLoop: loop)
        loop.execute {
            for handler in flushes.value { handler.flushDeferredWrites() }
        }
    }
}
