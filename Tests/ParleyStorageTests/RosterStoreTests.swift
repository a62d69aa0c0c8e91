import Foundation
import ParleyStorage
import Testing

@Suite struct RosterStoreTests {
    struct Refused: Error {}

    @Test(arguments: Backend.allCases) func itemsRoundTripAndEachTransactionBumpsTheVersionOnce(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage
        #expect(try await storage.roster(of: "juliet") == ([], 0))

        let romeo = RosterItem(
            contact: "romeo@example.net", name: "Romeo", groups: ["Friends", "Verona", "Friends"],
            subscription: .both, approved: true, version: 99)
        let seen = try await storage.modifyRoster(of: "juliet") { roster in
            #expect(roster.version == 0)
            try roster.setItem(romeo)
            try roster.setItem(RosterItem(contact: "nurse@example.net", askSubscribe: true))
            try roster.setItem(RosterItem(contact: "tybalt@example.net", subscription: .from))
            try roster.removeItem("tybalt@example.net")
            try roster.removeItem("nobody@example.net")
            #expect(roster.version == 0, "the version before this transaction's changes")
            #expect(try roster.itemCount() == 2)
            return try roster.item("romeo@example.net")
        }
        // The store sets the version and drops the repeated group; reads see the transaction's writes.
        var expected = romeo
        expected.groups = ["Friends", "Verona"]
        expected.version = 1
        #expect(seen == expected)

        let (items, version) = try await storage.roster(of: "juliet")
        #expect(version == 1)
        #expect(items == [RosterItem(contact: "nurse@example.net", askSubscribe: true, version: 1), expected])

        // Pending requests are not the roster: no bump. Nor is removing what is not there.
        try await storage.modifyRoster(of: "juliet") { roster in
            try roster.setPending(PendingSubscription(contact: "paris@example.net", stanza: "<presence/>", receivedAt: Date()))
            try roster.removeItem("nobody@example.net")
        }
        #expect(try await storage.roster(of: "juliet").version == 1)

        try await storage.modifyRoster(of: "juliet") { roster in
            var changed = try #require(try roster.item("nurse@example.net"))
            changed.askSubscribe = false
            changed.subscription = .to
            try roster.setItem(changed)
        }
        #expect(try await storage.roster(of: "juliet").version == 2)
        #expect(try await storage.roster(of: "juliet").items.map(\.version) == [2, 1])
        // Other users' rosters are their own.
        #expect(try await storage.roster(of: "romeo") == ([], 0))
    }

    @Test(arguments: Backend.allCases) func aThrowRollsBackEverything(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage
        try await storage.modifyRoster(of: "juliet") { roster in
            try roster.setItem(RosterItem(contact: "romeo@example.net", subscription: .both))
        }

        await #expect(throws: Refused.self) {
            try await storage.modifyRoster(of: "juliet") { roster in
                try roster.setItem(RosterItem(contact: "tybalt@example.net"))
                try roster.removeItem("romeo@example.net")
                try roster.setPending(PendingSubscription(contact: "paris@example.net", stanza: "<presence/>", receivedAt: Date()))
                throw Refused()
            }
        }
        let (items, version) = try await storage.roster(of: "juliet")
        #expect(version == 1)
        #expect(items == [RosterItem(contact: "romeo@example.net", subscription: .both, version: 1)])
        #expect(try await storage.pendingSubscriptions(of: "juliet").isEmpty)
        #expect(try await storage.rosterChanges(of: "juliet", since: 1) == [])
    }

    @Test(arguments: Backend.allCases) func unknownUsers(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage

        await #expect(throws: StorageError.accountNotFound(username: "mercutio")) {
            try await storage.modifyRoster(of: "mercutio") { _ in }
        }
        #expect(try await storage.roster(of: "mercutio") == ([], 0))
        #expect(try await storage.rosterChanges(of: "mercutio", since: 0) == nil)
        #expect(try await storage.pendingSubscriptions(of: "mercutio").isEmpty)
    }

    @Test(arguments: Backend.allCases) func deltasReportChangesAndRemovalsOldestFirst(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage
        let (a, b, c) = ("a@example.net", "b@example.net", "c@example.net")
        try await storage.modifyRoster(of: "juliet") { roster in  // v1
            try roster.setItem(RosterItem(contact: a))
            try roster.setItem(RosterItem(contact: b))
        }
        try await storage.modifyRoster(of: "juliet") { roster in try roster.setItem(RosterItem(contact: c)) }  // v2
        try await storage.modifyRoster(of: "juliet") { roster in try roster.removeItem(a) }  // v3
        try await storage.modifyRoster(of: "juliet") { roster in  // v4
            try roster.setItem(RosterItem(contact: b, name: "Bee"))
        }

        #expect(
            try await storage.rosterChanges(of: "juliet", since: 0) == [
                RosterChange(contact: c, item: RosterItem(contact: c, version: 2), version: 2),
                RosterChange(contact: a, item: nil, version: 3),
                RosterChange(contact: b, item: RosterItem(contact: b, name: "Bee", version: 4), version: 4),
            ])
        #expect(
            try await storage.rosterChanges(of: "juliet", since: 3) == [
                RosterChange(contact: b, item: RosterItem(contact: b, name: "Bee", version: 4), version: 4)
            ])
        #expect(try await storage.rosterChanges(of: "juliet", since: 4) == [])
        #expect(try await storage.rosterChanges(of: "juliet", since: 5) == nil, "a version from the future")
        #expect(try await storage.rosterChanges(of: "juliet", since: -1) == nil)

        // Added back: the item replaces its tombstone.
        try await storage.modifyRoster(of: "juliet") { roster in try roster.setItem(RosterItem(contact: a)) }  // v5
        #expect(
            try await storage.rosterChanges(of: "juliet", since: 2) == [
                RosterChange(contact: b, item: RosterItem(contact: b, name: "Bee", version: 4), version: 4),
                RosterChange(contact: a, item: RosterItem(contact: a, version: 5), version: 5),
            ])
    }

    @Test(arguments: Backend.allCases) func versionsOlderThanThePrunedTombstonesAreNotAnswered(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend, options: .init(rosterTombstoneLimit: 2))
        defer { fixture.remove() }
        let storage = fixture.storage
        let contacts = (1...5).map { "c\($0)@example.net" }
        try await storage.modifyRoster(of: "juliet") { roster in  // v1
            for contact in contacts { try roster.setItem(RosterItem(contact: contact)) }
        }
        for contact in contacts.prefix(3) {  // v2, v3, v4
            try await storage.modifyRoster(of: "juliet") { roster in try roster.removeItem(contact) }
        }

        // Three tombstones, two kept: the removal at v2 is forgotten.
        #expect(try await storage.rosterChanges(of: "juliet", since: 0) == nil)
        #expect(try await storage.rosterChanges(of: "juliet", since: 1) == nil)
        #expect(
            try await storage.rosterChanges(of: "juliet", since: 2) == [
                RosterChange(contact: contacts[1], item: nil, version: 3),
                RosterChange(contact: contacts[2], item: nil, version: 4),
            ])
        #expect(try await storage.roster(of: "juliet").items.map(\.contact) == Array(contacts.suffix(2)))
    }

    @Test(arguments: Backend.allCases) func pendingRequestsReplacePerContactOldestFirst(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage
        let start = Date(timeIntervalSince1970: 1_700_000_000)
        @Sendable func request(_ contact: String, _ seconds: TimeInterval, _ id: String) -> PendingSubscription {
            PendingSubscription(
                contact: contact, stanza: "<presence from='\(contact)' type='subscribe' id='\(id)'/>",
                receivedAt: start.addingTimeInterval(seconds))
        }

        try await storage.modifyRoster(of: "juliet") { roster in
            try roster.setPending(request("paris@example.net", 0, "1"))
            try roster.setPending(request("romeo@example.net", 1, "2"))
            try roster.setPending(request("tybalt@example.net", 2, "3"))
        }
        try await storage.modifyRoster(of: "juliet") { roster in
            // Asked again: the new request replaces the old one and is now the newest.
            try roster.setPending(request("paris@example.net", 3, "4"))
            try roster.removePending("tybalt@example.net")
            try roster.removePending("nobody@example.net")
            #expect(try roster.pending("paris@example.net")?.stanza.contains("id='4'") == true)
            #expect(try roster.pending("tybalt@example.net") == nil)
        }

        let pending = try await storage.pendingSubscriptions(of: "juliet")
        #expect(pending.map(\.contact) == ["romeo@example.net", "paris@example.net"])
        #expect(pending.map(\.stanza) == [request("romeo@example.net", 1, "2").stanza, request("paris@example.net", 3, "4").stanza])
        #expect(abs(pending[1].receivedAt.timeIntervalSince(start.addingTimeInterval(3))) < 0.001)
        let inTransaction = try await storage.modifyRoster(of: "juliet") { roster in try roster.allPending() }
        #expect(inTransaction == pending)
        #expect(try await storage.roster(of: "juliet") == ([], 0), "requests are kept without roster items")
    }

    @Test(arguments: Backend.allCases) func rosterOwnersNamingAContact(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend, users: ["juliet", "romeo", "nurse"])
        defer { fixture.remove() }
        let storage = fixture.storage
        try await storage.modifyRoster(of: "romeo") { roster in
            try roster.setItem(RosterItem(contact: "juliet@example.com", subscription: .both))
        }
        try await storage.modifyRoster(of: "nurse") { roster in
            try roster.setItem(RosterItem(contact: "juliet@example.com", subscription: .to))
            try roster.setItem(RosterItem(contact: "romeo@example.com"))
        }
        let owners = try await storage.rosterOwners(naming: "juliet@example.com")
        #expect(owners.map(\.user) == ["nurse", "romeo"])
        #expect(owners.map(\.subscription) == [.to, .both])
        #expect(try await storage.rosterOwners(naming: "paris@example.com").isEmpty)
    }
}
