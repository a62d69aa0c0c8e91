import ParleyCore
import Testing

/// A room's archive over its limit: cut back to its newest messages once every hundredth of
/// the limit, not after every message (finding where the newest N begin walks N rows).
@Suite struct MUCArchiveTrimScenarios {
    @Test func anArchiveStaysWithinAHundredthOfItsLimitAndKeepsTheNewest() async throws {
        // A limit of 200: cut every 2 messages, so at most 201 are kept between cuts.
        try await MUC.archiving({ $0.archiveMaxMessagesPerRoom = 200 }) { server in
            let alice = try await server.im("alice")
            try await MUC.createInstantRoom(alice, "team", nick: "Alice", codes: [110, 170, 201])
            try await alice.say((1...205).map { "m\($0)" }, in: "team")
            let oldest = try await alice.queryRoomArchive("team", set: "<max>1</max>")
            let count = try #require(oldest.count)
            #expect((200...201).contains(count), "\(count) messages kept")
            #expect(oldest.bodies == ["m\(205 - count + 1)"], "\(oldest.bodies)")
            let newest = try await alice.queryRoomArchive("team", set: "<max>1</max><before/>", queryID: "newest")
            #expect(newest.bodies == ["m205"])
        }
    }
}
