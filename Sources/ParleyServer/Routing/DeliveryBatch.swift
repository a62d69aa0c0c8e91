import NIOCore

/// Deliveries to many sessions at once, such as a PEP notification to every contact. Each
/// session takes its delivery at once, exactly as `SessionHandle.deliver` would (so one that
/// is detached, ending or gone queues it or hands it on then); only the hop to the event loop
/// of an attached session waits for `submit()`, which makes one task per loop instead of one
/// per stanza: with hundreds of recipients, those tasks (and the flushes they schedule, each
/// its own task) were a large part of a notification's cost.
///
/// The caller submits before it routes anything else, so nothing it sends later overtakes
/// what the batch holds, and the stanzas for one loop keep their order.
public final class DeliveryBatch {
    private var groups: [(loop: any EventLoop, work: [@Sendable () -> Void])] = []

    public init() {}

    func add(on loop: any EventLoop, _ work: @escaping @Sendable () -> Void) {
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
                for body in work { body() }
            } else {
                loop.execute {
                    for body in work { body() }
                }
            }
        }
    }
}
