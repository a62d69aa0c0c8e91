import Foundation
import GRDB
import Testing

@testable import ParleyStorage

/// vCards, private XML and last logouts (XEP-0054, XEP-0049, XEP-0012): one of each per
/// account, kept across a reopen of the file, gone with the account.
@Suite struct ProfileStoreTests {
    static let vCard = "<vCard xmlns='vcard-temp'><FN>Juliet Capulet</FN></vCard>"
    static let bookmarks = "<storage xmlns='storage:bookmarks'><conference jid='balcony@conference.example.com'/></storage>"

    @Test(arguments: Backend.allCases) func vCardIsReplacedWhole(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage
        #expect(try await storage.vCard(of: "juliet") == nil)
        let first = StoredVCard(xml: Self.vCard, photoHash: "a1b2", updatedAt: Date(timeIntervalSince1970: 1_700_000_000.123))
        try await storage.setVCard(first, for: "juliet")
        #expect(try await storage.vCard(of: "juliet") == first)
        #expect(try await storage.vCard(of: "romeo") == nil, "one account's vCard is not another's")

        let second = StoredVCard(xml: "<vCard xmlns='vcard-temp'/>", photoHash: nil, updatedAt: Date(timeIntervalSince1970: 1_700_000_100))
        try await storage.setVCard(second, for: "juliet")
        #expect(try await storage.vCard(of: "juliet") == second)

        #expect(try await storage.deleteVCard(of: "juliet"))
        #expect(try await storage.deleteVCard(of: "juliet") == false)
        #expect(try await storage.vCard(of: "juliet") == nil)
        await #expect(throws: StorageError.accountNotFound(username: "mercutio")) {
            try await storage.setVCard(first, for: "mercutio")
        }
        #expect(try await storage.vCard(of: "mercutio") == nil)
    }

    @Test(arguments: Backend.allCases) func privateXMLIsKeyedByNameAndNamespace(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage
        let prefs = "<prefs xmlns='example:prefs'><theme>dark</theme></prefs>"
        let otherPrefs = "<prefs xmlns='example:other'/>"
        #expect(
            try await storage.setPrivateXML(
                [
                    PrivateXMLElement(name: "storage", namespace: "storage:bookmarks", xml: Self.bookmarks),
                    PrivateXMLElement(name: "prefs", namespace: "example:prefs", xml: prefs),
                    PrivateXMLElement(name: "prefs", namespace: "example:other", xml: otherPrefs),
                ], for: "juliet", maxElements: 10))
        let keys: [(name: String, namespace: String)] = [
            ("prefs", "example:other"), ("storage", "storage:bookmarks"), ("prefs", "example:prefs"), ("storage", "example:prefs"),
        ]
        #expect(try await storage.privateXML(of: "juliet", keys) == [otherPrefs, Self.bookmarks, prefs, nil])
        #expect(try await storage.privateXML(of: "romeo", keys) == [nil, nil, nil, nil])
        #expect(try await storage.privateXML(of: "mercutio", keys) == [nil, nil, nil, nil])

        // Replacing and removing in one write.
        let replaced = "<prefs xmlns='example:prefs'><theme>light</theme></prefs>"
        #expect(
            try await storage.setPrivateXML(
                [
                    PrivateXMLElement(name: "prefs", namespace: "example:prefs", xml: replaced),
                    PrivateXMLElement(name: "prefs", namespace: "example:other", xml: nil),
                ], for: "juliet", maxElements: 10))
        #expect(try await storage.privateXML(of: "juliet", keys) == [nil, Self.bookmarks, replaced, nil])
        await #expect(throws: StorageError.accountNotFound(username: "mercutio")) {
            try await storage.setPrivateXML([], for: "mercutio", maxElements: 10)
        }
    }

    @Test(arguments: Backend.allCases) func privateXMLCountLimitRefusesTheWholeWrite(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage
        func element(_ index: Int, _ text: String = "x") -> PrivateXMLElement {
            PrivateXMLElement(name: "e\(index)", namespace: "example:ns", xml: "<e\(index) xmlns='example:ns'>\(text)</e\(index)>")
        }
        #expect(try await storage.setPrivateXML([element(1), element(2)], for: "juliet", maxElements: 2))
        // A third is refused, and so is what came with it.
        #expect(try await storage.setPrivateXML([element(1, "changed"), element(3)], for: "juliet", maxElements: 2) == false)
        #expect(try await storage.privateXML(of: "juliet", [("e1", "example:ns"), ("e3", "example:ns")]) == [element(1).xml, nil])
        // Replacing at the limit is fine; so is a new one once another went.
        #expect(try await storage.setPrivateXML([element(2, "changed")], for: "juliet", maxElements: 2))
        let swap = [PrivateXMLElement(name: "e1", namespace: "example:ns", xml: nil), element(3)]
        #expect(try await storage.setPrivateXML(swap, for: "juliet", maxElements: 2))
        #expect(
            try await storage.privateXML(of: "juliet", [("e1", "example:ns"), ("e2", "example:ns"), ("e3", "example:ns")])
                == [nil, element(2, "changed").xml, element(3).xml])
        #expect(try await storage.setPrivateXML([element(1)], for: "romeo", maxElements: 2), "the limit is per account")
    }

    @Test(arguments: Backend.allCases) func lastActivityKeepsTheLatestLogout(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage
        #expect(try await storage.lastActivity(of: "juliet") == nil)
        let first = LastActivity(loggedOutAt: Date(timeIntervalSince1970: 1_700_000_000.5), status: "Heading home")
        try await storage.setLastActivity(first, for: "juliet")
        #expect(try await storage.lastActivity(of: "juliet") == first)
        let second = LastActivity(loggedOutAt: Date(timeIntervalSince1970: 1_700_000_900), status: nil)
        try await storage.setLastActivity(second, for: "juliet")
        #expect(try await storage.lastActivity(of: "juliet") == second)
        #expect(try await storage.lastActivity(of: "romeo") == nil)
        await #expect(throws: StorageError.accountNotFound(username: "mercutio")) {
            try await storage.setLastActivity(first, for: "mercutio")
        }
    }

    @Test(arguments: Backend.allCases) func everythingSurvivesReopeningTheFile(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let vCard = StoredVCard(xml: Self.vCard, photoHash: nil, updatedAt: Date(timeIntervalSince1970: 1_700_000_000))
        let activity = LastActivity(loggedOutAt: Date(timeIntervalSince1970: 1_700_000_001), status: "bye")
        do {
            let storage = fixture.storage
            try await storage.setVCard(vCard, for: "juliet")
            _ = try await storage.setPrivateXML(
                [PrivateXMLElement(name: "storage", namespace: "storage:bookmarks", xml: Self.bookmarks)], for: "juliet", maxElements: 1)
            try await storage.setLastActivity(activity, for: "juliet")
        }
        let reopened = try await fixture.reopen()
        #expect(try await reopened.vCard(of: "juliet") == vCard)
        #expect(try await reopened.privateXML(of: "juliet", [("storage", "storage:bookmarks")]) == [Self.bookmarks])
        #expect(try await reopened.lastActivity(of: "juliet") == activity)
    }

    @Test(arguments: Backend.allCases) func deletingTheAccountDeletesItsProfile(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage
        for user in ["juliet", "romeo"] {
            try await storage.setVCard(StoredVCard(xml: Self.vCard, photoHash: "ab", updatedAt: Date()), for: user)
            _ = try await storage.setPrivateXML(
                [PrivateXMLElement(name: "storage", namespace: "storage:bookmarks", xml: Self.bookmarks)], for: user, maxElements: 1)
            try await storage.setLastActivity(LastActivity(loggedOutAt: Date(), status: "bye"), for: user)
        }
        #expect(try await storage.deleteAccount(username: "juliet", origin: .admin))
        var counts: [Int] = []
        for table in ["vcards", "private_xml", "last_activity"] { counts.append(try await fixture.rowCount(table)) }
        #expect(counts == [1, 1, 1], "only romeo's rows are left")

        // A new account of the same name starts with nothing.
        try await storage.createAccount(username: "juliet", keys: [StorageFixture.keys("SHA-256", seed: 2)])
        #expect(try await storage.vCard(of: "juliet") == nil)
        #expect(try await storage.privateXML(of: "juliet", [("storage", "storage:bookmarks")]) == [nil])
        #expect(try await storage.lastActivity(of: "juliet") == nil)
        #expect(try await storage.vCard(of: "romeo") != nil)
    }
}
