@testable import ParleyServer
import Testing

/// The bounded memory of origin-ids one account sent.
@Suite struct RecentOriginIDsTests {
    @Test func remembersUpToItsCapacityAndForgetsTheOldestFirst() {
        var memory = RecentOriginIDs(capacity: 3)
        let keys = ["a", "b", "c", "d"].map { RecentOriginIDs.key(recipient: "bob@localhost", originID: $0) }
        let firstThree = keys.prefix(3).map { memory.insert($0) }
        #expect(firstThree == [true, true, true])
        let again = memory.insert(keys[0])
        #expect(!again)
        let fourth = memory.insert(keys[3])
        #expect(fourth)
        #expect(memory.count == 3)
        #expect(!memory.contains(keys[0]))
        #expect(memory.keys == Array(keys[1...3]))
        // The recipient is part of the key.
        let otherRecipient = memory.insert(RecentOriginIDs.key(recipient: "carol@localhost", originID: "d"))
        #expect(otherRecipient)
    }
}
