import NIOCore
import NIOPosix

/// Something whose writes a `DeliveryBatch` leaves unflushed until `flushDeferredWrites()`.
protocol DeferredFlushing: AnyObject {
    func flushDeferredWrites()
}

/// The sessions small `DeliveryBatch`es wrote to on this thread's event loop and have not
/// flushed: one task flushes them all, after whatever the loop had queued when the first was
/// added.
///
/// A flush is a `write(2)`, the largest single cost of a delivery. Flushed at the end of each
/// batch, a session in a busy room paid one for every message; deferred to this task, the
/// batches that run before it (other messages' fan-outs handed over by the other loop, those
/// read from other sockets in the same pass) share it: in a room of 10 at full speed, 0.33
/// writes per delivery instead of 0.77 and about a tenth less CPU (bench/README.md, MUC,
/// fifteenth round). The stanzas are written to the channel at once, in order; only the
/// system call waits.
final class LoopFlushes {
    private var waiting: [any DeferredFlushing] = []
    private var scheduled = false

    // Each thread reads and writes only its own value.
    nonisolated(unsafe) private static let current = ThreadSpecificVariable<LoopFlushes>()

    /// This thread's list (an event loop's thread: each loop has its own).
    static var onThisThread: LoopFlushes {
        if let flushes = current.currentValue { return flushes }
        let flushes = LoopFlushes()
        current.currentValue = flushes
        return flushes
    }

    /// `session`'s writes wait for the task, which is scheduled on `loop` (this thread's) if
    /// it is not already.
    func add(_ session: any DeferredFlushing, on loop: any EventLoop) {
        waiting.append(session)
        guard !scheduled else { return }
        scheduled = true
        let this = NIOLoopBound(self, eventLoop: loop)
        loop.execute { this.value.flushAll() }
    }

    private func flushAll() {
        // Taken first: a flush may end a session whose end delivers to others on this loop,
        // and those add to a fresh list with a task of their own.
        let sessions = waiting
        waiting = []
        scheduled = false
        for session in sessions { session.flushDeferredWrites() }
    }
}
