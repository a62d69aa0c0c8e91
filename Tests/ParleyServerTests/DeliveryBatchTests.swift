import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

@testable import ParleyServer

/// A batch runs nothing until it is submitted, then runs each loop's work on that loop, in
/// the order it was added.
@Suite struct DeliveryBatchTests {
    @Test func nothingRunsBeforeSubmitAndEachLoopKeepsItsOrder() async throws {
        let (group, loops) = Self.twoLoops()
        let ran = NIOLockedValueBox([[Int]](repeating: [], count: 2))
        let batch = DeliveryBatch()
        for index in 0..<200 { Self.add(index, on: index % 2, of: loops, to: batch, recordingIn: ran) }
        // Give the loops a chance to run anything handed to them too early.
        try await loops[0].scheduleTask(in: .milliseconds(20)) {}.futureResult.get()
        #expect(ran.withLockedValue { $0 } == [[], []])
        batch.submit()
        // Each loop's work is one task: anything executed after the submit runs after it.
        for loop in loops { try await loop.submit {}.get() }
        #expect(ran.withLockedValue { $0[0] } == Array(stride(from: 0, to: 200, by: 2)))
        #expect(ran.withLockedValue { $0[1] } == Array(stride(from: 1, to: 200, by: 2)))
        // Submitted work is gone from the batch: a second submit runs nothing again.
        batch.submit()
        for loop in loops { try await loop.submit {}.get() }
        #expect(ran.withLockedValue { $0[0].count + $0[1].count } == 200)
        try await group.shutdownGracefully()
    }

    /// A fan-out adds runs to one loop, then to another, then to the first again; a batch is
    /// used again after a submit. Each loop still gets exactly its own work, in order.
    @Test func runsForOneLoopAndABatchUsedAgainKeepEachLoopsOrder() async throws {
        let (group, loops) = Self.twoLoops()
        let ran = NIOLockedValueBox([[Int]](repeating: [], count: 2))
        let batch = DeliveryBatch()
        let rounds: [[Int]] = [[0, 0, 0, 1, 1, 0, 1, 1, 1, 0], [1, 1, 0, 0, 1], [0]]
        var expected = [[Int]](repeating: [], count: 2)
        var index = 0
        for round in rounds {
            for loopIndex in round {
                Self.add(index, on: loopIndex, of: loops, to: batch, recordingIn: ran)
                expected[loopIndex].append(index)
                index += 1
            }
            batch.submit()
            for loop in loops { try await loop.submit {}.get() }
            #expect(ran.withLockedValue { $0 } == expected)
        }
        try await group.shutdownGracefully()
    }

    /// Submitted on one of its loops, the batch hands the other loops their work before it
    /// runs its own: a room's fan-out goes out on both loops side by side, not one half after
    /// the other.
    @Test func submittedOnALoopTheOtherLoopsStartBeforeItsOwnWorkEnds() async throws {
        let (group, loops) = Self.twoLoops()
        let otherStarted = ConditionLock(value: false)
        let sawOther = try await loops[0].submit { () -> Bool in
            let batch = DeliveryBatch()
            let result = NIOLockedValueBox(false)
            batch.add(on: loops[0]) {
                // Waits (bounded) for the other loop's work: it only comes if it was handed
                // over before this runs.
                let started = otherStarted.lock(whenValue: true, timeoutSeconds: 5)
                if started { otherStarted.unlock() }
                result.withLockedValue { $0 = started }
            }
            batch.add(on: loops[1]) {
                otherStarted.lock()
                otherStarted.unlock(withValue: true)
            }
            batch.submit()
            return result.withLockedValue { $0 }
        }.get()
        #expect(sawOther)
        try await group.shutdownGracefully()
    }

    /// A group of two loops (they must be two: the tests tell their work apart).
    private static func twoLoops() -> (MultiThreadedEventLoopGroup, [any EventLoop]) {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let loops = [group.next(), group.next()]
        #expect(loops[0] !== loops[1])
        return (group, loops)
    }

    /// Work for `loops[loopIndex]` that checks it runs there and records `index` in its list.
    private static func add(
        _ index: Int, on loopIndex: Int, of loops: [any EventLoop], to batch: DeliveryBatch,
        recordingIn ran: NIOLockedValueBox<[[Int]]>
    ) {
        let loop = loops[loopIndex]
        batch.add(on: loop) {
            #expect(loop.inEventLoop)
            ran.withLockedValue { $0[loopIndex].append(index) }
        }
    }
}
