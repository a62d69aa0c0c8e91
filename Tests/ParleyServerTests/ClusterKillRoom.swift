import Foundation
import ParleyCore
import Testing

/// The room of the cluster kill test (`ClusterKillTests`): persistent, created by a client of
/// the node that is going to be killed (so that node holds it), joined by every client, so it
/// has occupants on every node. While the node dies, every client sends groupchat messages.
///
/// What "delivered" means here: an occupant whose node survives stays in the room through
/// the takeover (the node that takes the dead one over restores it from the recorded
/// occupant list) and must receive, live and exactly once (one room stanza-id per message
/// id), every groupchat message any sender saw acknowledged (XEP-0198 `<a/>`), including
/// those of senders on the killed node. Occupants on the killed node lose their sessions and
/// with them their place in the room (the others see them leave with status 333); what was
/// said while they were away is in the room's archive (MAM), which is not what this test
/// checks.
struct ClusterKillRoom {
    static let jid = "kill@conference.localhost"
    let creator: ClusterPeer
    let survivors: [ClusterPeer]
    let lost: [ClusterPeer]

    static func open(_ peers: [ClusterPeer], nodeOf: [String: String], holder: String) async throws -> ClusterKillRoom {
        let creator = peers.first { nodeOf[$0.user] == holder }!
        try await creator.sendStanza("<presence to='\(jid)/\(creator.user)'><x xmlns='http://jabber.org/protocol/muc'/></presence>")
        try await waitUntil("the room is created", seconds: 20) { isIn(creator, creator) }
        try await creator.request(
            """
            <iq type='set' id='kill-config' to='\(jid)'><query xmlns='http://jabber.org/protocol/muc#owner'>\
            <x xmlns='jabber:x:data' type='submit'><field var='muc#roomconfig_persistentroom'><value>1</value></field></x>\
            </query></iq>
            """, id: "kill-config")
        for peer in peers where peer !== creator {
            try await peer.sendStanza("<presence to='\(jid)/\(peer.user)'><x xmlns='http://jabber.org/protocol/muc'/></presence>")
        }
        try await waitUntil("every client is in the room and sees every other", seconds: 60) {
            peers.allSatisfy { peer in peers.allSatisfy { isIn(peer, $0) } }
        }
        return ClusterKillRoom(
            creator: creator, survivors: peers.filter { nodeOf[$0.user] != holder }, lost: peers.filter { nodeOf[$0.user] == holder })
    }

    /// Whether `viewer` sees `occupant` available in the room.
    static func isIn(_ viewer: ClusterPeer, _ occupant: ClusterPeer) -> Bool {
        guard let presence = viewer.roomPresence["\(jid)/\(occupant.user)"] else { return false }
        return presence.type == nil
    }

    static func id(_ round: Int, _ from: String, _ index: Int) -> String { "g\(round)-\(from)-\(index)" }

    /// Each of `senders` says `count` things to the room.
    func round(_ number: Int, _ senders: [ClusterPeer], count: Int, pause: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            for peer in senders {
                group.addTask {
                    for index in 0..<count {
                        guard peer.isConnected else { return }
                        try? await peer.sendGroupchat(to: Self.jid, id: Self.id(number, peer.user, index))
                        try? await Task.sleep(for: pause)
                    }
                }
            }
        }
    }

    /// The checks: every acknowledged groupchat message reached every surviving occupant
    /// exactly once, and the survivors saw the killed node's occupants removed (333).
    func verify(_ peers: [ClusterPeer]) async throws {
        let acknowledged = Set(peers.flatMap { $0.acknowledged.filter { $0.hasPrefix("g") } })
        #expect(acknowledged.count > survivors.count * 2, "groupchat messages acknowledged: \(acknowledged.count)")
        let fromLost = acknowledged.filter { id in lost.contains { id.hasPrefix("g2-\($0.user)-") } }.count
        try await Self.waitUntil("every acknowledged groupchat message reached every surviving occupant", seconds: 60) {
            survivors.allSatisfy { peer in acknowledged.allSatisfy { peer.received[$0] != nil } }
        }
        var duplicates: [String] = []
        for peer in survivors {
            for (id, copies) in peer.received where id.hasPrefix("g") && copies.stanzaIDs.count != 1 {
                duplicates.append("\(peer.user) got \(id) \(copies.stanzaIDs.count) times")
            }
        }
        #expect(duplicates.isEmpty, "\(duplicates.prefix(10))")
        for peer in survivors {
            for gone in lost {
                let presence = peer.roomPresence["\(Self.jid)/\(gone.user)"]
                #expect(presence?.type == "unavailable" && presence?.statusCodes == [333],
                    "\(peer.user) sees \(gone.user) removed: \(presence?.xmlString() ?? "nothing")")
            }
            for other in survivors { #expect(Self.isIn(peer, other), "\(peer.user) still sees \(other.user) in the room") }
        }
        print("cluster kill test, room: \(acknowledged.count) groupchat messages acknowledged, \(survivors.count) surviving occupants, "
            + "\(lost.count) lost with the room's node, who had \(fromLost) of their messages acknowledged")
    }

    static func waitUntil(_ what: String, seconds: Int, _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while !condition() {
            guard ContinuousClock.now < deadline else { throw ScenarioFailure("timed out waiting until \(what)") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}
