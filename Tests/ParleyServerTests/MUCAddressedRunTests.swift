import ParleyCore
@testable import ParleyMUC
import Testing

/// The runs of addresses a room hands the service with its entries' presences (see
/// `MUCAddressedRun`): the service sends each copy in a run to the run's addresses without
/// reading the copy, so each must say exactly what the copy's own `from` and `to` say.
@Suite struct MUCAddressedRunTests {
    static let room = try! JID("hall@conference.localhost")
    static func session(_ user: String, _ resource: String = "phone") -> JID { try! JID("\(user)@localhost/\(resource)") }
    static let entry = XMLElement("presence", namespace: XMLNamespace.client)

    /// Every copy a run covers is addressed as the run says, and the runs are in order and
    /// within `out`.
    static func expectRunsMatch(_ runs: [MUCAddressedRun], _ out: [XMLElement], sourceLocation: SourceLocation = #_sourceLocation) {
        var previousEnd = 0
        for run in runs {
            #expect(run.start >= previousEnd && run.end <= out.count, sourceLocation: sourceLocation)
            for offset in 0..<run.count {
                let (from, to) = run.addresses(at: offset)
                #expect(out[run.start + offset].from == from.description, sourceLocation: sourceLocation)
                #expect(out[run.start + offset].to == to.description, sourceLocation: sourceLocation)
            }
            previousEnd = run.end
        }
    }

    @Test func entriesHandOverTheAddressesOfEveryCopyToAndAboutTheNewcomer() throws {
        var room = try MUCRoom(jid: Self.room, locked: false, owner: Self.session("owner").bare)
        room.configuration.whois = .moderators
        var out: [XMLElement] = []
        // The owner is a moderator, so it gets the presences with real JIDs; the others not.
        let first = try room.available(Self.entry, from: Self.session("owner"), nick: "owner", created: true, maxOccupants: 100, out: &out, runsFrom: 0)
        Self.expectRunsMatch(first, out)
        #expect(first.map(\.count) == [0, 0], "the first occupant sees nobody and nobody sees it")
        for (index, user) in ["bob", "carol", "dave"].enumerated() {
            out = [XMLElement("message", namespace: XMLNamespace.client)]  // runs count from where `out` was
            let runs = try room.available(Self.entry, from: Self.session(user), nick: user, created: false, maxOccupants: 100, out: &out, runsFrom: 0)
            Self.expectRunsMatch(runs, out)
            #expect(runs.map(\.count) == [index + 1, index + 1], "the occupants to \(user), and \(user) to them")
            #expect(runs.first?.start == 1)
        }
        // Another device of an occupant: the others' presences to it, as one run.
        out = []
        let device = try room.available(Self.entry, from: Self.session("carol", "laptop"), nick: "carol", created: false, maxOccupants: 100, out: &out, runsFrom: 0)
        Self.expectRunsMatch(device, out)
        #expect(device.map(\.count) == [3])
        // A presence update: to every session but the occupant's own two.
        out = []
        var away = Self.entry
        away.append(XMLElement("show", text: "away"))
        let update = try room.available(away, from: Self.session("carol"), nick: "carol", created: false, maxOccupants: 100, out: &out, runsFrom: 0)
        Self.expectRunsMatch(update, out)
        #expect(update.map(\.count) == [3])
        #expect(out.count == 5, "two self-presences, three to the others")
        // A nickname change has no runs: the service reads those copies' addresses.
        out = []
        let renamed = try room.available(Self.entry, from: Self.session("dave"), nick: "david", created: false, maxOccupants: 100, out: &out, runsFrom: 0)
        #expect(renamed.isEmpty && !out.isEmpty)
    }

    @Test func aSmallRoomMakesNoRuns() throws {
        // Its copies go by their own addresses: see `MUCAddressedRun.minimumCount`.
        var room = try MUCRoom(jid: Self.room, locked: false, owner: Self.session("owner").bare)
        var out: [XMLElement] = []
        for user in ["owner", "bob", "carol"] {
            let runs = try room.available(Self.entry, from: Self.session(user), nick: user, created: false, maxOccupants: 100, out: &out)
            #expect(runs.isEmpty)
        }
        #expect(out.count == 3 + 3 + 3 * 2, "the occupants' lists, the newcomers to the others, each one's self-presence and subject")
        #expect(MUCAddressedRun.minimumCount == 682)
    }
}
