import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

@testable import ParleyServer

/// Sessions written to by batches wait for one task on their loop, which flushes each once,
/// after the tasks that were queued before the first of them was written to.
@Suite struct LoopFlushesTests {
    final class Session: DeferredFlushing, @unchecked Sendable {
        let name: String
        let log: NIOLockedValueBox<[String]>
        init(_ name: String, _ log: NIOLockedValueBox<[String]>) {
            self.name = name
            self.log = log
        }
        func flushDeferredWrites() { log.withLockedValue { $0.append("flush \(name)") } }
    }

    @Test func batchesQueuedBeforeTheFirstWriteShareOneFlushPerSession() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let log = NIOLockedValueBox<[String]>([])
        let (a, b) = (Session("a", log), Session("b", log))
        // Two batches handed over while the loop was busy: both tasks are queued before the
        // first runs. The first writes to a, the second to a again (already waiting: its
        // handler does not add it twice) and b.
        try await loop.submit {
            loop.execute {
                log.withLockedValue { $0.append("batch 1") }
                LoopFlushes.onThisThread.add(a, on: loop)
            }
            loop.execute {
                log.withLockedValue { $0.append("batch 2") }
                LoopFlushes.onThisThread.add(b, on: loop)
            }
        }.get()
        try await loop.submit {}.get()
        #expect(log.withLockedValue { $0 } == ["batch 1", "batch 2", "flush a", "flush b"])

        // Once flushed, the next write waits for a task of its own.
        try await loop.submit { LoopFlushes.onThisThread.add(b, on: loop) }.get()
        try await loop.submit {}.get()
        #expect(log.withLockedValue { $0 } == ["batch 1", "batch 2", "flush a", "flush b", "flush b"])
        try await group.shutdownGracefully()
    }

    @Test func eachLoopFlushesItsOwnSessionsOnItsOwnThread() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let loops = [group.next(), group.next()]
        let log = NIOLockedValueBox<[String]>([])
        final class Checked: DeferredFlushing, @unchecked Sendable {
            let loop: any EventLoop
            let flushed = NIOLockedValueBox(0)
            init(_ loop: any EventLoop) { self.loop = loop }
            func flushDeferredWrites() {
                #expect(loop.inEventLoop)
                flushed.withLockedValue { $0 += 1 }
            }
        }
        let sessions = loops.map(Checked.init)
        for (loop, session) in zip(loops, sessions) {
            try await loop.submit { LoopFlushes.onThisThread.add(session, on: loop) }.get()
        }
        for loop in loops { try await loop.submit {}.get() }
        #expect(sessions.map { $0.flushed.withLockedValue { $0 } } == [1, 1])
        #expect(log.withLockedValue { $0 }.isEmpty)
        try await group.shutdownGracefully()
    }
}
