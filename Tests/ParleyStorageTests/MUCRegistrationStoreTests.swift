import Foundation
import Testing

@testable import ParleyStorage

/// v14_muc_registration: a reserved nickname is kept with its affiliation and goes with the
/// account; whether a room is moderated is kept with the room.
@Suite struct MUCRegistrationStoreTests {
    @Test(arguments: Backend.allCases) func reservedNicknamesAndModerationAreKeptAndGoWithTheAccount(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage
        let juliet = StoredMUCRoom.Affiliation(jid: "juliet@example.com", username: "juliet", affiliation: "owner")
        let romeo = StoredMUCRoom.Affiliation(jid: "romeo@example.com", username: "romeo", affiliation: "member", nick: "Romeo")
        var room = MUCRoomStoreTests.room(affiliations: [juliet, romeo])
        room.moderated = true
        try await storage.saveMUCRoom(room)
        let reopened = try await fixture.reopen()
        let loaded = try await reopened.mucRooms(of: "conference.example.com")
        var expected = room
        // Usernames only tie rows to accounts when written; they are not read back.
        expected.affiliations = room.affiliations.map { StoredMUCRoom.Affiliation(jid: $0.jid, username: nil, affiliation: $0.affiliation, nick: $0.nick) }
        #expect(loaded == [expected], "\(loaded)")
        #expect(loaded.first?.affiliations.last?.nick == "Romeo" && loaded.first?.moderated == true)

        #expect(try await reopened.deleteAccount(username: "romeo", origin: .admin))
        let after = try await reopened.mucRooms(of: "conference.example.com")
        #expect(after.first?.affiliations.compactMap(\.nick) == [], "the reservation went with the account")
    }

    @Test(arguments: Backend.allCases) func oneNicknameHasOneHolderPerRoom(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage
        let romeo = StoredMUCRoom.Affiliation(jid: "romeo@example.com", username: nil, affiliation: "member", nick: "R")
        let other = StoredMUCRoom.Affiliation(jid: "other@example.org", username: nil, affiliation: "member", nick: "R")
        await #expect(throws: (any Error).self) {
            try await storage.saveMUCRoom(MUCRoomStoreTests.room(affiliations: [romeo, other]))
        }
    }
}
