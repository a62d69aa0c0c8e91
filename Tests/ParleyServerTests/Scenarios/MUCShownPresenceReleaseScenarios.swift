import Logging
import ParleyCore
@testable import ParleyMUC
import ParleyServer
import Testing

/// A room keeps each occupant's presence as the others see it (serialized once) while
/// occupants enter, and lets it go once the room has been quiet for a while: what the next
/// newcomer and the others get must not change.
@Suite struct MUCShownPresenceReleaseScenarios {
    static let room = MUCScenarios.room

    @Test func aQuietRoomLetsItsShownPresencesGoAndNewcomersStillGetTheSamePresence() async throws {
        var settings = MUCService.Settings(domain: MUC.service, serverDomain: TestServer.domain)
        settings.archiveByDefault = false
        // The scenario looks step by step instead of every two seconds.
        settings.shownPresenceReleasePeriod = nil
        let muc = MUCService(settings: settings, logger: Logger(label: "parley.scenario.muc"))
        func kept() -> Int { muc.withLockedState { $0.rooms["team"]?.occupantsWithShownPresence ?? -1 } }

        try await TestServer.with(accounts: TestServer.threeAccounts, hostedServices: [muc], { _ in }) { server in
            let (alice, bob, carol) = try await MUCScenarios.threeInTheRoom(server)
            // Bob's shown presence carries his show and status.
            try await bob.send("<presence to='\(Self.room)/Bob'><show>away</show><status>lunch</status></presence>")
            try await bob.expectRoomPresence("team", "Bob", codes: [110])
            for client in [alice, carol] { try await client.expectRoomPresence("team", "Bob") }

            // Carol leaves and comes back: what everyone gets with the presences kept.
            func reenter() async throws -> [String] {
                try await carol.send("<presence to='\(Self.room)/Carol' type='unavailable'/>")
                try await carol.expectRoomPresence("team", "Carol", type: "unavailable", codes: [110])
                for client in [alice, bob] { try await client.expectRoomPresence("team", "Carol", type: "unavailable") }
                let entry = try await carol.enter("team", nick: "Carol")
                var seen = entry.others.map { $0.xmlString() }
                for client in [alice, bob] { seen.append(try await client.expectRoomPresence("team", "Carol").xmlString()) }
                return seen
            }
            let before = try await reenter()
            #expect(before.count == 4)
            #expect(before[1].contains("<show>away</show>") && before[1].contains("lunch"), "\(before[1])")
            // Alice (the owner, a moderator) sees Carol's real JID; Bob does not.
            #expect(before[2].contains("carol@localhost/r") && !before[3].contains("carol@localhost/r"), "\(before)")
            #expect(kept() == 3)

            // Used since the last look: kept. Unused for a whole period: let go, once.
            #expect(muc.releaseQuietShownPresences() == 0)
            #expect(kept() == 3)
            #expect(muc.releaseQuietShownPresences() == 1)
            #expect(kept() == 0)
            #expect(muc.releaseQuietShownPresences() == 0)

            // The next entry makes them again, byte for byte the same stanzas.
            let after = try await reenter()
            #expect(after == before, "\(after)\n\(before)")
            #expect(kept() == 3)

            // A presence change after a release reaches everyone with its new content.
            #expect(muc.releaseQuietShownPresences() == 0)
            #expect(muc.releaseQuietShownPresences() == 1)
            try await bob.send("<presence to='\(Self.room)/Bob'><show>dnd</show></presence>")
            try await bob.expectRoomPresence("team", "Bob", codes: [110])
            for client in [alice, carol] {
                let changed = try await client.expectRoomPresence("team", "Bob")
                #expect(changed.firstChild("show")?.text == "dnd", "\(changed.xmlString())")
            }
            let last = try await reenter()
            #expect(last[1].contains("<show>dnd</show>") && !last[1].contains("lunch"), "\(last[1])")
        }
    }
}
