import Foundation
import Testing

@testable import ParleyStorage

/// Rooms' archives (v12_muc_archive) and room vCards (v13_muc_vcard): kept per room in order,
/// cut to a size, expired, gone with their room; a sender's real JID goes with its account,
/// its messages stay with the room.
@Suite struct MUCArchiveStoreTests {
    static let service = "conference.example.com"

    static func entry(_ room: String, _ id: String, nick: String = "Juliet", username: String? = "juliet", at date: Date = Date())
        -> MUCArchiveEntry
    {
        MUCArchiveEntry(
            service: service, room: room, stanzaID: id, nick: nick, senderUsername: username,
            senderJID: username == nil ? "nurse@elsewhere.example" : nil,
            stanza: "<message xmlns='jabber:client' type='groupchat'><body>\(id)</body></message>", archivedAt: date)
    }

    @Test(arguments: Backend.allCases) func pagesAreInOrderAndEachRoomIsCutToItsSize(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage
        try await storage.appendMUCArchive((1...5).map { Self.entry("balcony", "b\($0)") } + [Self.entry("garden", "g1")], maxPerRoom: 3)
        let all = try await storage.queryMUCArchive(service: Self.service, room: "balcony", MUCArchiveQuery(max: 10))
        #expect(all.messages.map(\.stanzaID) == ["b3", "b4", "b5"] && all.count == 3 && all.complete)
        #expect(all.messages.first?.senderUsername == "juliet")

        var page = MUCArchiveQuery(max: 1)
        page.after = "b3"
        let second = try await storage.queryMUCArchive(service: Self.service, room: "balcony", page)
        #expect(second.messages.map(\.stanzaID) == ["b4"] && !second.complete && second.count == 3)
        var last = MUCArchiveQuery(max: 2)
        last.before = ""
        #expect(try await storage.queryMUCArchive(service: Self.service, room: "balcony", last).messages.map(\.stanzaID) == ["b4", "b5"])
        var unknown = MUCArchiveQuery(max: 2)
        unknown.after = "g1"
        await #expect(throws: StorageError.self, "another room's id is unknown here") {
            try await storage.queryMUCArchive(service: Self.service, room: "balcony", unknown)
        }
        let tails = try await storage.mucArchiveTails(service: Self.service, limit: 2)
        #expect(tails.mapValues { $0.map(\.stanzaID) } == ["balcony": ["b4", "b5"], "garden": ["g1"]])
    }

    /// The blocking append, as a writer with a thread of its own calls it: SQLite writes on
    /// that thread, PostgreSQL waits for its `async` one.
    @Test(arguments: Backend.allCases) func aThreadOfItsOwnAppendsAndCutsAsTheAsyncCallDoes(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage
        try await Self.onThreadOfItsOwn {
            try storage.appendMUCArchiveBlocking((1...4).map { Self.entry("balcony", "b\($0)") }, maxPerRoom: 2)
            try storage.appendMUCArchiveBlocking([Self.entry("garden", "g1", nick: "Romeo", username: "romeo")], maxPerRoom: nil)
        }
        let balcony = try await storage.queryMUCArchive(service: Self.service, room: "balcony", MUCArchiveQuery(max: 10))
        #expect(balcony.messages.map(\.stanzaID) == ["b3", "b4"])
        let garden = try await storage.queryMUCArchive(service: Self.service, room: "garden", MUCArchiveQuery(max: 10))
        #expect(garden.messages.map(\.stanzaID) == ["g1"] && garden.messages.first?.senderUsername == "romeo")
    }

    static func onThreadOfItsOwn(_ body: @escaping @Sendable () throws -> Void) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            Thread {
                do {
                    try body()
                    continuation.resume()
                } catch {
                    continuation.resume(throwing: error)
                }
            }.start()
        }
    }

    @Test(arguments: Backend.allCases) func aDeletedAccountLeavesItsMessagesWithoutItsJIDAndExpiredMessagesGo(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage
        let old = Date(timeIntervalSinceNow: -86_400 * 10)
        try await storage.appendMUCArchive(
            [Self.entry("balcony", "old", at: old), Self.entry("balcony", "r1", nick: "Romeo", username: "romeo"), Self.entry("balcony", "n1", nick: "Nurse", username: nil)],
            maxPerRoom: nil)
        var byRomeo = MUCArchiveQuery(max: 10)
        byRomeo.senderUsername = "romeo"
        #expect(try await storage.queryMUCArchive(service: Self.service, room: "balcony", byRomeo).messages.map(\.stanzaID) == ["r1"])
        #expect(try await storage.deleteAccount(username: "romeo", origin: .admin))
        let after = try await storage.queryMUCArchive(service: Self.service, room: "balcony", MUCArchiveQuery(max: 10))
        #expect(after.messages.map(\.stanzaID) == ["old", "r1", "n1"])
        #expect(after.messages[1].senderUsername == nil && after.messages[1].senderJID == nil, "romeo's real JID went with his account")
        #expect(after.messages[2].senderJID == "nurse@elsewhere.example")

        #expect(try await storage.pruneMUCArchive(before: Date(timeIntervalSinceNow: -86_400)) == 1)
        #expect(try await storage.queryMUCArchive(service: Self.service, room: "balcony", MUCArchiveQuery(max: 10)).count == 2)
    }

    @Test(arguments: Backend.allCases) func unstoredRoomsLoseTheirArchivesAndAStoredRoomKeepsItsVCardUntilDeleted(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage
        var room = MUCRoomStoreTests.room(affiliations: [])
        room.archiving = false
        room.vCard = "<vCard xmlns='vcard-temp'><FN>Balcony</FN></vCard>"
        room.photoHash = "b5e2cac7f213fe2f9c04aab801e10bf8cc3472b2"
        try await storage.saveMUCRoom(room)
        try await storage.appendMUCArchive([Self.entry("balcony", "b1"), Self.entry("fleeting", "f1")], maxPerRoom: nil)
        try await storage.deleteUnstoredMUCArchives(service: Self.service)
        #expect(try await storage.mucArchiveTails(service: Self.service, limit: 5).keys.sorted() == ["balcony"])

        let reopened = try await fixture.reopen()
        #expect(try await reopened.mucRooms(of: Self.service) == [room])
        room.vCard = nil
        room.photoHash = nil
        try await reopened.saveMUCRoom(room)
        #expect(try await reopened.mucRooms(of: Self.service).first?.vCard == nil)
        room.vCard = "<vCard xmlns='vcard-temp'/>"
        try await reopened.saveMUCRoom(room)
        try await reopened.deleteMUCRoom(service: Self.service, name: "balcony")
        try await reopened.saveMUCRoom(MUCRoomStoreTests.room(affiliations: []))
        #expect(try await reopened.mucRooms(of: Self.service).first?.vCard == nil, "the vCard went with the deleted room")
        #expect(try await reopened.mucRooms(of: Self.service).first?.archiving == true)
    }
}
