import Foundation
import Testing

@testable import ParleyStorage

/// Persistent MUC rooms (v10_muc): saved whole, kept across a reopen of the file, replaced
/// on save, deleted with their affiliations; a local account's affiliations go with it.
@Suite struct MUCRoomStoreTests {
    static func room(subject: String? = "Plans", affiliations: [StoredMUCRoom.Affiliation]) -> StoredMUCRoom {
        var room = StoredMUCRoom(
            service: "conference.example.com", name: "balcony", title: "The balcony", description: "", isPublic: true,
            whois: "anyone", occupantsMayChangeSubject: false, membersOnly: true, password: "s3cret", subject: subject, subjectFrom: "balcony@conference.example.com/Juliet",
            occupantIDKey: [1, 2, 3], affiliations: affiliations)
        // Not the default, so a backend that drops it (v19_muc_speed / v9_muc_allowpm) fails the comparison.
        room.allowPrivateMessages = "moderators"
        room.maxOccupants = 25  // and v21_muc_room_limits / v12_muc_room_limits
        room.membersMayInvite = true
        return room
    }

    @Test(arguments: Backend.allCases) func roomsAreSavedReplacedReopenedAndDeleted(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage
        let owner = StoredMUCRoom.Affiliation(jid: "juliet@example.com", username: nil, affiliation: "owner")
        let remote = StoredMUCRoom.Affiliation(jid: "nurse@elsewhere.example", username: nil, affiliation: "member")
        try await storage.saveMUCRoom(Self.room(affiliations: [owner, remote]))
        #expect(try await storage.mucRooms(of: "conference.example.com") == [Self.room(affiliations: [owner, remote])])
        #expect(try await storage.mucRooms(of: "rooms.example.com").isEmpty)

        let changed = Self.room(subject: nil, affiliations: [owner])
        try await storage.saveMUCRoom(changed)
        let reopened = try await fixture.reopen()
        #expect(try await reopened.mucRooms(of: "conference.example.com") == [changed])
        try await reopened.deleteMUCRoom(service: "conference.example.com", name: "balcony")
        #expect(try await reopened.mucRooms(of: "conference.example.com").isEmpty)
    }

    @Test(arguments: Backend.allCases) func aLocalAccountsAffiliationsGoWithTheAccount(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage
        let juliet = StoredMUCRoom.Affiliation(jid: "juliet@example.com", username: "juliet", affiliation: "owner")
        let romeo = StoredMUCRoom.Affiliation(jid: "romeo@example.com", username: "romeo", affiliation: "member")
        let ghost = StoredMUCRoom.Affiliation(jid: "tybalt@example.com", username: "tybalt", affiliation: "outcast")
        try await storage.saveMUCRoom(Self.room(affiliations: [juliet, romeo, ghost]))
        #expect(try await storage.mucRooms(of: "conference.example.com").first?.affiliations.map(\.jid) == [juliet.jid, romeo.jid])
        #expect(try await storage.deleteAccount(username: "romeo", origin: .admin))
        let rooms = try await storage.mucRooms(of: "conference.example.com")
        #expect(rooms.count == 1 && rooms.first?.affiliations.map(\.jid) == [juliet.jid], "the room stays, romeo's membership goes")
    }
}
