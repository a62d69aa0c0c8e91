import Foundation
import NIOConcurrencyHelpers
import ParleyCore
import ParleyStorage
import Testing

@testable import ParleyServer

/// The in-process profile API that avatar and bookmark synchronization (XEP-0398, XEP-0411)
/// builds on: the same checks as the wire, and every stored change reported with its origin.
@Suite struct ProfileServiceTests {
    static func withService(_ limits: ProfileService.Limits = .init(), _ body: (ProfileService, SQLiteStorage) async throws -> Void) async throws {
        let directory = NSTemporaryDirectory() + "parley-profile-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let storage = try SQLiteStorage(path: directory + "/parley.sqlite")
        try await storage.createAccount(username: "alice", keys: try AccountKeys.derive(password: "alice-password", iterations: 4096))
        try await body(ProfileService(vCards: storage, privateXML: storage, limits: limits), storage)
    }

    static func element(_ xml: String) throws -> XMLElement {
        try #require(ProfileXML.parse(xml))
    }

    @Test func vCardWritesAreReportedWithTheirPhotoHashAndOrigin() async throws {
        try await Self.withService { profiles, _ in
            let changes = NIOLockedValueBox([ProfileService.Change]())
            profiles.observe { change in changes.withLockedValue { $0.append(change) } }
            let vCard = try Self.element("<vCard xmlns='vcard-temp'><PHOTO><BINVAL>YW\nJj</BINVAL></PHOTO></vCard>")
            let origin = try JID("alice@localhost/phone")
            try await profiles.setVCard(vCard, of: "alice", by: origin)
            #expect(try await profiles.vCard(of: "alice") == vCard)
            #expect(try await profiles.photoHash(of: "alice") == "a9993e364706816aba3e25717850c26c9cd0d89d")
            try await profiles.setVCard(try Self.element("<vCard xmlns='vcard-temp'/>"), of: "alice")

            let seen = changes.withLockedValue { $0 }
            #expect(seen.count == 2)
            guard case .vCard("alice", let first, let hash, let by)? = seen.first else { Issue.record("first change: \(seen)"); return }
            #expect(first == vCard && hash == "a9993e364706816aba3e25717850c26c9cd0d89d" && by == origin)
            guard case .vCard("alice", _, nil, nil)? = seen.last else { Issue.record("second change: \(seen)"); return }
        }
    }

    @Test func refusedWritesAreNeitherStoredNorReported() async throws {
        var limits = ProfileService.Limits()
        limits.maxVCardBytes = 100
        limits.maxPrivateElements = 1
        try await Self.withService(limits) { profiles, _ in
            let changes = NIOLockedValueBox(0)
            profiles.observe { _ in changes.withLockedValue { $0 += 1 } }
            let big = try Self.element("<vCard xmlns='vcard-temp'><DESC>\(String(repeating: "z", count: 100))</DESC></vCard>")
            await #expect(throws: StanzaError.self) { try await profiles.setVCard(big, of: "alice") }
            let reserved = try Self.element("<x xmlns='jabber:iq:roster'/>")
            await #expect(throws: StanzaError.self) { try await profiles.setPrivateXML([reserved], of: "alice") }
            let one = try Self.element("<one xmlns='example:ns'>1</one>"), two = try Self.element("<two xmlns='example:ns'>2</two>")
            await #expect(throws: StanzaError.self) { try await profiles.setPrivateXML([one, two], of: "alice") }
            #expect(changes.withLockedValue { $0 } == 0)
            #expect(try await profiles.vCard(of: "alice") == nil)
            #expect(try await profiles.privateXML(of: "alice", [("one", "example:ns")]) == [nil])
        }
    }

    @Test func privateWritesAndRemovalsAreReported() async throws {
        try await Self.withService { profiles, _ in
            let changes = NIOLockedValueBox([ProfileService.Change]())
            profiles.observe { change in changes.withLockedValue { $0.append(change) } }
            let bookmarks = try Self.element("<storage xmlns='storage:bookmarks'><conference jid='a@b'/></storage>")
            try await profiles.setPrivateXML([bookmarks], of: "alice")
            #expect(try await profiles.privateXML(of: "alice", [("storage", "storage:bookmarks")]) == [bookmarks])
            try await profiles.setPrivateXML([try Self.element("<storage xmlns='storage:bookmarks'/>")], of: "alice")
            #expect(try await profiles.privateXML(of: "alice", [("storage", "storage:bookmarks")]) == [nil])
            let seen = changes.withLockedValue { $0 }
            guard seen.count == 2, case .privateXML("alice", "storage", "storage:bookmarks", let stored?, nil) = seen[0],
                case .privateXML("alice", "storage", "storage:bookmarks", nil, nil) = seen[1]
            else { Issue.record("changes: \(seen)"); return }
            #expect(stored == bookmarks)
        }
    }
}
