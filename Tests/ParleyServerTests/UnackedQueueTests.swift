@testable import ParleyServer
import Testing

/// XEP-0198 counter arithmetic: sequence numbers and `h` are compared modulo 2^32.
@Suite struct UnackedQueueTests {
    @Test func acknowledgementsReleaseInOrder() throws {
        var queue = UnackedQueue<String>()
        #expect(queue.append("a") == 1)
        #expect(queue.append("b") == 2)
        #expect(queue.append("c") == 3)
        #expect(try queue.acknowledge(0) == [])
        #expect(try queue.acknowledge(2) == ["a", "b"])
        // The same h again releases nothing.
        #expect(try queue.acknowledge(2) == [])
        #expect(queue.pending == ["c"])
        #expect(try queue.acknowledge(3) == ["c"])
        #expect(queue.isEmpty && queue.sent == 3 && queue.acknowledged == 3)
    }

    @Test func anAcknowledgementOfMoreThanWasSentIsRefused() throws {
        var queue = UnackedQueue<Int>()
        queue.append(1)
        queue.append(2)
        #expect(throws: UnackedQueue<Int>.AckError.handledCountTooHigh(h: 3, sendCount: 2)) { try queue.acknowledge(3) }
        // Nothing was released by the refused acknowledgement.
        #expect(queue.count == 2)
        #expect(try queue.acknowledge(1) == [1])
    }

    @Test func countingWrapsAround() throws {
        var queue = UnackedQueue<Int>(startingAt: UInt32.max - 1)
        #expect(queue.append(1) == UInt32.max)
        #expect(queue.append(2) == 0)
        #expect(queue.append(3) == 1)
        #expect(queue.append(4) == 2)
        #expect(try queue.acknowledge(UInt32.max) == [1])
        #expect(try queue.acknowledge(1) == [2, 3])
        #expect(throws: UnackedQueue<Int>.AckError.handledCountTooHigh(h: 3, sendCount: 2)) { try queue.acknowledge(3) }
        #expect(try queue.acknowledge(2) == [4])
        #expect(queue.isEmpty && queue.acknowledged == 2)
    }

    @Test func removeAllReturnsWhatWasNeverAcknowledged() throws {
        var queue = UnackedQueue<Int>()
        for value in 1...5 { queue.append(value) }
        _ = try queue.acknowledge(2)
        #expect(queue.removeAll() == [3, 4, 5])
        #expect(queue.isEmpty)
    }
}

/// An idle XEP-0198 session keeps no ring grown by a burst.
@Suite struct UnackedQueueCapacityTests {
    @Test func aDrainedQueueGivesItsRingBack() throws {
        var queue = UnackedQueue<Int>()
        #expect(queue.capacity == 1)
        for item in 1...20 { queue.append(item) }
        #expect(queue.capacity >= 20)
        #expect(try queue.acknowledge(15) == Array(1...15))
        #expect(queue.capacity >= 20 && queue.pending == Array(16...20))
        #expect(try queue.acknowledge(20) == Array(16...20))
        #expect(queue.capacity == 1 && queue.isEmpty)
        // It goes on counting from where it was.
        #expect(queue.append(21) == 21)
        #expect(try queue.acknowledge(21) == [21])
    }
}
