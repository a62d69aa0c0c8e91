import Dispatch
import NIOCore
import NIOPosix
@testable import ParleyServer
import Testing

/// Tasks a session starts run on its event loop, before and after awaiting work elsewhere.
@Suite struct EventLoopTaskExecutorTests {
    @Test func aTaskRunsOnItsLoopAndComesBackToItAfterAnAwait() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let executors = EventLoopTaskExecutors(group)
        for loop in group.makeIterator() {
            let executor = try #require(executors.executor(for: loop))
            let (before, after) = await Task(executorPreference: executor) {
                let before = loop.inEventLoop
                // Resumed from a thread of Dispatch's, as a storage read completes.
                await withCheckedContinuation { continuation in
                    DispatchQueue.global().async { continuation.resume() }
                }
                return (before, loop.inEventLoop)
            }.value
            #expect(before)
            #expect(after)
        }
        try await group.shutdownGracefully()
    }

    @Test func aLoopOfAnotherGroupHasNoExecutor() {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let other = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? other.syncShutdownGracefully() }
        #expect(EventLoopTaskExecutors(group).executor(for: other.next()) == nil)
    }
}
