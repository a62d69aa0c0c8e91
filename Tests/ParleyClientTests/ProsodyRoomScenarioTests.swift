import Foundation
@testable import ParleyClient
import ParleyCore
import Testing

/// ParleyClient's group chat against Prosody's MUC component (with mod_muc_mam), so the
/// client is written to XEP-0045 and not to parleyd: entering, talking, private messages,
/// the subject, invitations, kick, ban, destruction, and paging through the room's archive
/// (XEP-0313 on the room JID, XEP-0059).
@Suite(.sharedProsody) struct ProsodyRoomScenarioTests {
    @Test func roomsOnProsodyFromCreationToDestructionWithArchivePaging() async throws {
        let room = try JID("planning@conference.localhost")
        let (nora, noraEvents) = try SharedProsody.client("nora")
        let (oscar, oscarEvents) = try SharedProsody.client("oscar")
        let (pat, patEvents) = try SharedProsody.client("pat")
        defer { Task { for client in [nora, oscar, pat] { await client.disconnect() } } }
        for client in [nora, oscar, pat] { try await client.connect() }
        do {
            try await scenario(room, nora, noraEvents, oscar, oscarEvents, pat, patEvents)
        } catch {
            for (name, events) in [("nora", noraEvents), ("oscar", oscarEvents), ("pat", patEvents)] { print("--- \(name): \(events.all)") }
            print("--- Prosody log ---\n\(try SharedProsody.prosody.logTail(lines: 60))")
            throw error
        }
    }

    private func scenario(
        _ room: JID, _ nora: ChatClient, _ noraEvents: EventRecorder, _ oscar: ChatClient, _ oscarEvents: EventRecorder, _ pat: ChatClient,
        _ patEvents: EventRecorder
    ) async throws {

        // Prosody locks a new room until its owner accepts the configuration (§10.1.2).
        let created = try await nora.join(room, nick: "Nora")
        #expect(created.created)
        try await oscar.join(room, nick: "Oscar")
        let patJoined = try await pat.join(room, nick: "Pat")
        #expect(patJoined.occupants.map(\.nick) == ["Nora", "Oscar", "Pat"], "\(patJoined)")
        try await Rooms.next(noraEvents, "Pat joining") { if case .occupantJoined(room, let o) = $0 { o.nick == "Pat" } else { false } }

        for body in ["first", "second", "third, Oscar"] {
            try await nora.sendRoomMessage(to: room, body: body)
            try await Rooms.message(patEvents, body)
        }
        let mention = try await Rooms.message(oscarEvents, "third, Oscar")
        #expect(mention.nick == "Nora" && mention.mentionsMe && mention.stanzaID != nil, "\(mention)")

        // The room's archive (before anything else is said): newest page first, then the page before it.
        let latest = try await oscar.roomArchive(room, .latest, max: 2)
        #expect(latest.messages.map(\.body) == ["second", "third, Oscar"], "\(latest)")
        #expect(latest.messages.allSatisfy { $0.nick == "Nora" && $0.isHistory && $0.stanzaID != nil })
        let first = try #require(latest.first)
        let earlier = try await oscar.roomArchive(room, .before(first), max: 2)
        #expect(earlier.messages.map(\.body) == ["first"] && earlier.complete, "\(earlier)")

        try await oscar.sendPrivateMessage(to: "Pat", in: room, body: "just between us")
        try await Rooms.next(patEvents, "Oscar's private message") {
            if case .privateMessage(let m) = $0 { m.nick == "Oscar" && m.body == "just between us" } else { false }
        }

        try await nora.setSubject(of: room, to: "Q3 planning")
        try await Rooms.next(oscarEvents, "the subject") { $0 == .subjectChanged(room: room, subject: "Q3 planning", by: "Nora") }

        // XEP-0410 self-ping, what a reconnect asks: in while in, out once kicked.
        #expect(await pat.stillInRoom(room, nick: "Pat"))

        // A kick, then an invitation declined, then a ban that keeps Pat out.
        try await nora.kick("Pat", from: room, reason: "break time")
        try await Rooms.next(patEvents, "Pat kicked") {
            if case .removed(room, .kicked(_, let reason)) = $0 { reason == "break time" } else { false }
        }
        #expect(await pat.stillInRoom(room, nick: "Pat") == false)
        try await nora.invite(jid("pat"), to: room, reason: "come back")
        let invited = try await Rooms.next(patEvents, "the invitation") { if case .invited(let i) = $0 { i.room == room } else { false } }
        guard case .invited(let invitation) = invited else { return }
        // A semi-anonymous room names the inviter by occupant JID, and passes the decline to it.
        let inviter = try JID("planning@conference.localhost/Nora")
        #expect(invitation.from == inviter && invitation.reason == "come back" && !invitation.isDirect, "\(invitation)")
        await pat.decline(invitation, reason: "later")
        try await Rooms.next(noraEvents, "Pat's decline") {
            if case .invitationDeclined(room, let by, _) = $0 { by == jid("pat") } else { false }
        }
        try await nora.ban(jid("pat"), from: room, reason: "enough")
        let banned = await Rooms.refusal { try await pat.join(room, nick: "Pat") }
        #expect(banned?.condition == .forbidden, "\(String(describing: banned))")

        let notOwner = await Rooms.refusal { try await oscar.destroyRoom(room) }
        #expect(notOwner?.condition == .forbidden, "\(String(describing: notOwner))")
        try await nora.destroyRoom(room, reason: "planning done")
        try await Rooms.next(oscarEvents, "the room destroyed") {
            if case .removed(room, .destroyed(let reason, _)) = $0 { reason == "planning done" } else { false }
        }
    }
}
