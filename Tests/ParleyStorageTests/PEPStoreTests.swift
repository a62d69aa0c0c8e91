import Foundation
import GRDB
import Testing

@testable import ParleyStorage

/// The PEP store (XEP-0163): nodes with their configuration, items in publication order,
/// trimming to max_items, and everything gone with the account.
@Suite struct PEPStoreTests {
    static func item(_ id: String, _ text: String = "x") -> PEPItem {
        PEPItem(id: id, payload: "<nick xmlns='http://jabber.org/protocol/nick'>\(text)</nick>", publisher: "juliet@example.com")
    }

    @Test(arguments: Backend.allCases) func nodesAreCreatedOnceAndKeepTheirConfiguration(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage
        var configuration = PEPNodeConfiguration()
        configuration.accessModel = .whitelist
        configuration.maxItems = nil
        configuration.rosterGroupsAllowed = ["Friends"]
        #expect(try await storage.createPEPNode("urn:xmpp:bookmarks:1", of: "juliet", configuration: configuration, maxNodes: 10))
        #expect(try await !storage.createPEPNode("urn:xmpp:bookmarks:1", of: "juliet", configuration: PEPNodeConfiguration(), maxNodes: 10))
        #expect(try await storage.createPEPNode("http://jabber.org/protocol/nick", of: "juliet", configuration: PEPNodeConfiguration(), maxNodes: 10))
        let nodes = try await storage.pepNodes(of: "juliet")
        #expect(nodes.map(\.name) == ["http://jabber.org/protocol/nick", "urn:xmpp:bookmarks:1"])
        #expect(nodes[1].configuration == configuration)
        #expect(try await storage.pepNode("urn:xmpp:bookmarks:1", of: "juliet")?.configuration.maxItems == nil)
        #expect(try await storage.pepNodes(of: "romeo").isEmpty)
        #expect(try await storage.pepNode("urn:xmpp:bookmarks:1", of: "romeo") == nil)
    }

    @Test(arguments: Backend.allCases) func theNodeCountIsLimited(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage
        #expect(try await storage.createPEPNode("a", of: "juliet", configuration: PEPNodeConfiguration(), maxNodes: 2))
        #expect(try await storage.createPEPNode("b", of: "juliet", configuration: PEPNodeConfiguration(), maxNodes: 2))
        await #expect(throws: StorageError.quotaExceeded(limit: 2)) {
            try await storage.createPEPNode("c", of: "juliet", configuration: PEPNodeConfiguration(), maxNodes: 2)
        }
        #expect(try await storage.createPEPNode("c", of: "romeo", configuration: PEPNodeConfiguration(), maxNodes: 2), "per account")
        await #expect(throws: StorageError.accountNotFound(username: "mercutio")) {
            try await storage.createPEPNode("a", of: "mercutio", configuration: PEPNodeConfiguration(), maxNodes: 2)
        }
    }

    @Test(arguments: Backend.allCases) func itemsAreKeptInOrderAndTrimmedOldestFirst(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage
        _ = try await storage.createPEPNode("n", of: "juliet", configuration: PEPNodeConfiguration(), maxNodes: 10)
        #expect(try await storage.publishPEPItem(Self.item("1"), node: "n", of: "juliet", keepItems: 3).isEmpty)
        #expect(try await storage.publishPEPItem(Self.item("2"), node: "n", of: "juliet", keepItems: 3).isEmpty)
        #expect(try await storage.publishPEPItem(Self.item("3"), node: "n", of: "juliet", keepItems: 3).isEmpty)
        // A republished id becomes the newest; the fourth item pushes out the oldest.
        #expect(try await storage.publishPEPItem(Self.item("1", "again"), node: "n", of: "juliet", keepItems: 3).isEmpty)
        #expect(try await storage.publishPEPItem(Self.item("4"), node: "n", of: "juliet", keepItems: 3) == ["2"])
        #expect(try await storage.pepItems(node: "n", of: "juliet", ids: nil, newest: nil).map(\.id) == ["3", "1", "4"])
        #expect(try await storage.pepItems(node: "n", of: "juliet", ids: nil, newest: 2).map(\.id) == ["1", "4"])
        let asked = try await storage.pepItems(node: "n", of: "juliet", ids: ["4", "nope", "1"], newest: nil)
        #expect(asked.map(\.id) == ["4", "1"])
        #expect(asked[1].payload.contains("again"))
        #expect(asked[1].publisher == "juliet@example.com")

        // A smaller max_items drops the oldest at once.
        var configuration = PEPNodeConfiguration()
        configuration.maxItems = 1
        #expect(try await storage.configurePEPNode("n", of: "juliet", configuration: configuration, keepItems: 1))
        #expect(try await storage.pepItems(node: "n", of: "juliet", ids: nil, newest: nil).map(\.id) == ["4"])
        #expect(try await storage.pepNode("n", of: "juliet")?.configuration.maxItems == 1)
        #expect(try await !storage.configurePEPNode("missing", of: "juliet", configuration: configuration, keepItems: 1))

        await #expect(throws: StorageError.itemNotFound("PEP node missing of juliet")) {
            try await storage.publishPEPItem(Self.item("1"), node: "missing", of: "juliet", keepItems: 3)
        }
    }

    @Test(arguments: Backend.allCases) func retractPurgeAndDelete(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage
        _ = try await storage.createPEPNode("n", of: "juliet", configuration: PEPNodeConfiguration(), maxNodes: 10)
        _ = try await storage.publishPEPItem(Self.item("1"), node: "n", of: "juliet", keepItems: 10)
        _ = try await storage.publishPEPItem(Self.item("2"), node: "n", of: "juliet", keepItems: 10)
        #expect(try await storage.retractPEPItem("1", node: "n", of: "juliet"))
        #expect(try await !storage.retractPEPItem("1", node: "n", of: "juliet"))
        #expect(try await storage.pepItems(node: "n", of: "juliet", ids: nil, newest: nil).map(\.id) == ["2"])
        #expect(try await storage.purgePEPNode("n", of: "juliet"))
        #expect(try await storage.pepItems(node: "n", of: "juliet", ids: nil, newest: nil).isEmpty)
        #expect(try await storage.pepNode("n", of: "juliet") != nil, "a purge keeps the node")
        _ = try await storage.publishPEPItem(Self.item("3"), node: "n", of: "juliet", keepItems: 10)
        #expect(try await storage.deletePEPNode("n", of: "juliet"))
        #expect(try await !storage.deletePEPNode("n", of: "juliet"))
        #expect(try await storage.pepNode("n", of: "juliet") == nil)
        let items = try await fixture.rowCount("pep_items")
        #expect(items == 0, "a node's items go with it")
    }

    @Test(arguments: Backend.allCases) func itemsSurviveReopeningAndGoWithTheAccount(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        do {
            let storage = fixture.storage
            _ = try await storage.createPEPNode("n", of: "juliet", configuration: PEPNodeConfiguration(), maxNodes: 10)
            _ = try await storage.publishPEPItem(Self.item("1"), node: "n", of: "juliet", keepItems: 10)
            _ = try await storage.createPEPNode("n", of: "romeo", configuration: PEPNodeConfiguration(), maxNodes: 10)
            _ = try await storage.publishPEPItem(Self.item("r"), node: "n", of: "romeo", keepItems: 10)
        }
        let storage = try await fixture.reopen()
        #expect(try await storage.pepItems(node: "n", of: "juliet", ids: nil, newest: nil).map(\.id) == ["1"])

        #expect(try await storage.deleteAccount(username: "juliet", origin: .admin))
        let counts = (try await fixture.rowCount("pep_nodes"), try await fixture.rowCount("pep_items"))
        #expect(counts.0 == 1 && counts.1 == 1, "only romeo's node and item are left")
        try await storage.createAccount(username: "juliet", keys: [StorageFixture.keys("SHA-256", seed: 2)])
        #expect(try await storage.pepNodes(of: "juliet").isEmpty, "a new account of the same name starts empty")
    }

    @Test func aConfigurationStoredWithoutNewerOptionsReadsTheirDefaults() throws {
        let decoded = try JSONDecoder().decode(PEPNodeConfiguration.self, from: Data(#"{"accessModel":"open","maxItems":5}"#.utf8))
        var expected = PEPNodeConfiguration()
        expected.accessModel = .open
        expected.maxItems = 5
        #expect(decoded == expected)
    }
}
