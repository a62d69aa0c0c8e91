import Foundation
import ParleyStorage
import Testing

@Suite struct ArchiveStoreTests {
    static let juliet = "juliet@example.net"
    static let romeo = "romeo@example.net"

    /// A message from romeo to juliet (or back), in both archives, `seconds` after the epoch.
    static func entries(_ id: String, from sender: String = romeo, at seconds: Double, origin: String? = nil, retracts: String? = nil)
        -> [ArchiveEntry]
    {
        let recipient = sender == romeo ? juliet : romeo
        let stanza = "<message xmlns='jabber:client' type='chat' id='\(id)'><body>\(id)</body></message>"
        return [sender, recipient].map { owner in
            ArchiveEntry(
                owner: String(owner.prefix { $0 != "@" }), with: owner == sender ? recipient : sender, from: sender + "/phone",
                to: recipient, stanzaID: id, originID: origin, messageID: "client-\(id)", messageType: "chat", stanza: stanza,
                archivedAt: Date(timeIntervalSince1970: seconds), retracts: retracts)
        }
    }

    /// The same entry with another text: a body of its own.
    static func rewritten(_ entry: ArchiveEntry, stanza: String) -> ArchiveEntry {
        ArchiveEntry(
            owner: entry.owner, with: entry.with, from: entry.from, to: entry.to, stanzaID: entry.stanzaID, originID: entry.originID,
            messageID: entry.messageID, messageType: entry.messageType, stanza: stanza, archivedAt: entry.archivedAt,
            retracts: entry.retracts)
    }

    private func storageWithTen(_ backend: Backend) async throws -> (any ServerStorage, StorageFixture) {
        let fixture = try await StorageFixture(backend)
        let storage = fixture.storage
        var batch: [ArchiveEntry] = []
        for index in 1...10 {
            batch += Self.entries("m\(index)", from: index.isMultiple(of: 2) ? Self.juliet : Self.romeo, at: Double(index * 100))
        }
        try await storage.archive(batch, maxPerUser: nil)
        return (storage, fixture)
    }

    private func ids(_ page: ArchivePage) -> [String] { page.messages.map(\.stanzaID) }

    @Test(arguments: Backend.allCases) func messagesComeBackInServerOrderFromBothArchives(_ backend: Backend) async throws {
        let (storage, fixture) = try await storageWithTen(backend)
        defer { fixture.remove() }
        for user in ["juliet", "romeo"] {
            let page = try await storage.queryArchive(user: user, ArchiveQuery(max: 100))
            #expect(ids(page) == (1...10).map { "m\($0)" })
            #expect(page.complete && page.count == 10 && page.firstIndex == 0)
        }
        let positions = try await storage.queryArchive(user: "juliet", ArchiveQuery()).messages.map(\.position)
        #expect(positions == positions.sorted())
        #expect(try await storage.queryArchive(user: "nobody", ArchiveQuery()).messages.isEmpty)
    }

    @Test(arguments: Backend.allCases) func pagingForwardAndBackward(_ backend: Backend) async throws {
        let (storage, fixture) = try await storageWithTen(backend)
        defer { fixture.remove() }
        let first = try await storage.queryArchive(user: "juliet", ArchiveQuery(max: 4))
        #expect(ids(first) == ["m1", "m2", "m3", "m4"] && !first.complete && first.firstIndex == 0)
        let second = try await storage.queryArchive(user: "juliet", ArchiveQuery(after: "m4", max: 4))
        #expect(ids(second) == ["m5", "m6", "m7", "m8"] && !second.complete && second.firstIndex == 4)
        let third = try await storage.queryArchive(user: "juliet", ArchiveQuery(after: "m8", max: 4))
        #expect(ids(third) == ["m9", "m10"] && third.complete && third.count == 10)

        let last = try await storage.queryArchive(user: "juliet", ArchiveQuery(before: "", max: 3))
        #expect(ids(last) == ["m8", "m9", "m10"] && !last.complete && last.firstIndex == 7)
        let earlier = try await storage.queryArchive(user: "juliet", ArchiveQuery(before: "m8", max: 5))
        #expect(ids(earlier) == ["m3", "m4", "m5", "m6", "m7"] && !earlier.complete)
        let earliest = try await storage.queryArchive(user: "juliet", ArchiveQuery(before: "m3", max: 5))
        #expect(ids(earliest) == ["m1", "m2"] && earliest.complete)

        await #expect(throws: StorageError.itemNotFound("archive id 'nope'")) {
            try await storage.queryArchive(user: "juliet", ArchiveQuery(after: "nope"))
        }
        let counted = try await storage.queryArchive(user: "juliet", ArchiveQuery(max: 0))
        #expect(counted.messages.isEmpty && counted.count == 10)
    }

    @Test(arguments: Backend.allCases) func withStartAndEndFilter(_ backend: Backend) async throws {
        let (storage, fixture) = try await storageWithTen(backend)
        defer { fixture.remove() }
        try await storage.archive(Self.entries("other", at: 2000).map { entry in
            var entry = entry
            if entry.owner == "juliet" { entry.with = "nurse@example.net" } else { entry.owner = "nobody" }
            return entry
        }, maxPerUser: nil)
        let withRomeo = try await storage.queryArchive(user: "juliet", ArchiveQuery(with: Self.romeo, max: 100))
        #expect(withRomeo.count == 10)
        let withNurse = try await storage.queryArchive(user: "juliet", ArchiveQuery(with: "nurse@example.net"))
        #expect(ids(withNurse) == ["other"])
        let full = try await storage.queryArchive(user: "juliet", ArchiveQuery(with: Self.romeo + "/phone", withIsFull: true, max: 100))
        #expect(full.count == 6, "romeo's phone sent m1, m3, m5, m7, m9 and 'other'")
        let window = try await storage.queryArchive(
            user: "juliet", ArchiveQuery(start: Date(timeIntervalSince1970: 300), end: Date(timeIntervalSince1970: 500)))
        #expect(ids(window) == ["m3", "m4", "m5"] && window.complete && window.count == 3)
    }

    @Test(arguments: Backend.allCases) func preferencesDecideWhatIsArchived(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage
        #expect(try await storage.archivePreferences(of: "juliet") == ArchivePreferences())
        let never = ArchivePreferences(defaultMode: .always, always: [], never: [Self.romeo])
        try await storage.setArchivePreferences(never, of: "juliet")
        #expect(try await storage.archivePreferences(of: "juliet") == never)
        try await storage.archive(Self.entries("m1", at: 1), maxPerUser: nil)
        #expect(try await storage.queryArchive(user: "juliet", ArchiveQuery()).count == 0)
        #expect(try await storage.queryArchive(user: "romeo", ArchiveQuery()).count == 1, "romeo's own preferences apply to his")

        try await storage.setArchivePreferences(ArchivePreferences(defaultMode: .roster), of: "juliet")
        try await storage.archive(Self.entries("m2", at: 2), maxPerUser: nil)
        #expect(try await storage.queryArchive(user: "juliet", ArchiveQuery()).count == 0, "romeo is not in her roster")
        try await storage.modifyRoster(of: "juliet") { roster in try roster.setItem(RosterItem(contact: Self.romeo)) }
        try await storage.archive(Self.entries("m3", at: 3), maxPerUser: nil)
        #expect(ids(try await storage.queryArchive(user: "juliet", ArchiveQuery())) == ["m3"])

        try await storage.setArchivePreferences(ArchivePreferences(defaultMode: .never, always: [Self.romeo]), of: "juliet")
        try await storage.archive(Self.entries("m4", at: 4), maxPerUser: nil)
        #expect(ids(try await storage.queryArchive(user: "juliet", ArchiveQuery())) == ["m3", "m4"])
        await #expect(throws: StorageError.accountNotFound(username: "nobody")) {
            try await storage.setArchivePreferences(ArchivePreferences(), of: "nobody")
        }
    }

    @Test(arguments: Backend.allCases) func retentionKeepsTheNewest(_ backend: Backend) async throws {
        let (storage, fixture) = try await storageWithTen(backend)
        defer { fixture.remove() }
        try await storage.archive(Self.entries("m11", at: 1100), maxPerUser: 3)
        #expect(ids(try await storage.queryArchive(user: "juliet", ArchiveQuery())) == ["m9", "m10", "m11"])
        let pruned = try await storage.pruneArchive(before: Date(timeIntervalSince1970: 1050))
        #expect(pruned == 4, "m9 in both archives, m10 in both")
        #expect(ids(try await storage.queryArchive(user: "romeo", ArchiveQuery())) == ["m11"])
    }

    @Test(arguments: Backend.allCases) func onlyTheSenderRetractsAndBothArchivesKeepATombstone(_ backend: Backend) async throws {
        let (storage, fixture) = try await storageWithTen(backend)
        defer { fixture.remove() }
        try await storage.archive(Self.entries("m11", at: 1100, origin: "o11"), maxPerUser: nil)
        // Juliet cannot retract romeo's message; romeo can, by origin-id.
        try await storage.archive(Self.entries("r1", from: Self.juliet, at: 1200, retracts: "o11"), maxPerUser: nil)
        try await storage.archive(Self.entries("r2", at: 1300, retracts: "o11"), maxPerUser: nil)
        for user in ["juliet", "romeo"] {
            let page = try await storage.queryArchive(user: user, ArchiveQuery(after: "m10"))
            #expect(ids(page) == ["m11", "r1", "r2"])
            let target = try #require(page.messages.first)
            #expect(target.stanza == nil && target.retractedAt == Date(timeIntervalSince1970: 1300))
            #expect(target.from == Self.romeo + "/phone" && target.originID == "o11")
            #expect(target.messageID == "client-m11" && target.messageType == "chat", "what the tombstone names the message by")
            #expect(page.messages[1].stanza != nil && page.messages[2].stanza != nil)
        }
        // By stanza-id too.
        try await storage.archive(Self.entries("r3", from: Self.juliet, at: 1400, retracts: "m10"), maxPerUser: nil)
        #expect(try await storage.queryArchive(user: "romeo", ArchiveQuery(after: "m9", max: 1)).messages.first?.stanza == nil)
    }

    @Test(arguments: Backend.allCases) func recentOriginIDsAreWhatTheUserSentNewestFirst(_ backend: Backend) async throws {
        let (storage, fixture) = try await storageWithTen(backend)
        defer { fixture.remove() }
        try await storage.archive(Self.entries("m11", at: 1100, origin: "o11"), maxPerUser: nil)
        try await storage.archive(Self.entries("m12", from: Self.juliet, at: 1200, origin: "o12"), maxPerUser: nil)
        try await storage.archive(Self.entries("m13", at: 1300, origin: "o13"), maxPerUser: nil)
        let sent = try await storage.recentOriginIDs(of: "romeo", sentAs: Self.romeo, limit: 10)
        #expect(sent == [SentOriginID(to: Self.juliet, originID: "o13"), SentOriginID(to: Self.juliet, originID: "o11")])
        #expect(try await storage.recentOriginIDs(of: "romeo", sentAs: Self.romeo, limit: 1).map(\.originID) == ["o13"])
        #expect(try await storage.recentOriginIDs(of: "juliet", sentAs: Self.juliet, limit: 10).map(\.originID) == ["o12"])
        #expect(try await storage.recentOriginIDs(of: "nobody", sentAs: "nobody@example.net", limit: 10).isEmpty)
    }
}
