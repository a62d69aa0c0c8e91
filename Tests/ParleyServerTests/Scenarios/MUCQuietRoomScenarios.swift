import Logging
import ParleyCore
@testable import ParleyMUC
import ParleyServer
import Testing

/// What a room keeps per occupant once it is quiet (bench/README.md, MUC, seventh round): the
/// occupant's presence without the entry's MUC element, and no recipients' `to`s or parsed
/// addresses after a quiet while; the next message and the next entry reach everyone as
/// before, addressed as before.
@Suite struct MUCQuietRoomScenarios {
    static let room = MUCScenarios.room

    static func service() -> MUCService {
        var settings = MUCService.Settings(domain: MUC.service, serverDomain: TestServer.domain)
        settings.archiveByDefault = false
        // The scenarios look step by step instead of every two seconds.
        settings.shownPresenceReleasePeriod = nil
        return MUCService(settings: settings, logger: Logger(label: "parley.scenario.muc"))
    }

    @Test func occupantsKeepTheirPresenceOnceWithoutTheEntryElement() async throws {
        let muc = Self.service()
        try await TestServer.with(accounts: TestServer.threeAccounts, hostedServices: [muc], { _ in }) { server in
            let (_, bob, _) = try await MUCScenarios.threeInTheRoom(server)
            // The three entered with the same presence (the server adds its avatar hash
            // element): one instance for the three.
            #expect(muc.withLockedState { $0.rooms["team"]?.sharedPresences.count } == 1)
            let carol = muc.withLockedState { $0.rooms["team"]?.occupant("Carol")?.presence }
            #expect(carol?.elements.contains { $0.namespace == MUC.muc } == false, "\(carol?.xmlString() ?? "none")")
            try await bob.send(
                "<presence to='\(Self.room)/Bob'><x xmlns='\(MUC.muc)'><history maxstanzas='0'/></x><status>here</status></presence>")
            try await bob.expectRoomPresence("team", "Bob", codes: [110])
            let kept = muc.withLockedState { $0.rooms["team"]?.occupant("Bob")?.presence }
            #expect(kept?.elements.map(\.name).first == "status", "\(kept?.xmlString() ?? "none")")
            #expect(kept?.elements.contains { $0.namespace == MUC.muc } == false, "\(kept?.xmlString() ?? "none")")
            #expect(muc.withLockedState { $0.rooms["team"]?.sharedPresences.count } == 2)
            #expect(muc.withLockedState { $0.rooms["team"]?.occupant("Carol")?.presence } == carol)
        }
    }

    @Test func aQuietRoomsNextMessageAndEntryReachEveryone() async throws {
        let muc = Self.service()
        try await TestServer.with(accounts: TestServer.threeAccounts, hostedServices: [muc], { _ in }) { server in
            let (alice, bob, carol) = try await MUCScenarios.threeInTheRoom(server)
            func released() -> Bool {
                muc.withLockedState { state in
                    state.rooms["team"]?.recipientsBySession.values.allSatisfy { $0.to == nil } == true
                }
            }
            // Two looks without an entry or a message: the `to`s go.
            muc.releaseQuietShownPresences()
            #expect(!released())
            muc.releaseQuietShownPresences()
            #expect(released())

            try await bob.send("<message to='\(Self.room)' type='groupchat' id='q1'><body>still here?</body></message>")
            for (client, name) in [(alice, "alice"), (bob, "bob"), (carol, "carol")] {
                let message = try await client.nextElement()
                #expect(message.name == "message" && message.firstChild("body")?.text == "still here?", "\(message.xmlString())")
                #expect(message.to == "\(name)@\(TestServer.domain)/r", "\(message.xmlString())")
                #expect(message.from == "\(Self.room)/Bob")
            }
            #expect(!released(), "a message makes them again")

            muc.releaseQuietShownPresences()
            muc.releaseQuietShownPresences()
            #expect(released())
            try await carol.send("<presence to='\(Self.room)/Carol' type='unavailable'/>")
            try await carol.expectRoomPresence("team", "Carol", type: "unavailable", codes: [110])
            for client in [alice, bob] {
                let gone = try await client.expectRoomPresence("team", "Carol", type: "unavailable")
                #expect(gone.to?.hasPrefix(client === alice ? "alice@" : "bob@") == true, "\(gone.xmlString())")
            }
            let entry = try await carol.enter("team", nick: "Carol")
            #expect(entry.others.map { $0.from ?? "" } == ["\(Self.room)/Alice", "\(Self.room)/Bob"])
            for client in [alice, bob] {
                let back = try await client.expectRoomPresence("team", "Carol")
                #expect(back.to?.hasPrefix(client === alice ? "alice@" : "bob@") == true, "\(back.xmlString())")
            }
            #expect(!released())
        }
    }
}
