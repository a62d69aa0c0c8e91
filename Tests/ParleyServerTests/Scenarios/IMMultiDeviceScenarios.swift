import ParleyCore
import Testing

/// The multi-device policies (sessions.on_same_resource, single_device, max_per_account)
/// seen by the clients: who is kicked with what, what the contacts see, and that nothing
/// sent to a kicked session is lost.
@Suite struct IMMultiDeviceScenarios {
    /// RFC 6120 §7.7.2.2 replace: the old session gets `<conflict/>` with a text, its
    /// subscribers see it go unavailable, and a message to its full JID afterwards reaches
    /// the session that replaced it.
    @Test func replaceKicksTheOldSessionAndItsUnavailableIsBroadcast() async throws {
        try await TestServer.with { server in
            try await Subscribe.establish(server, "bob", to: "alice")
            let bob = try await server.im("bob")
            let old = try await server.im("alice", "phone")
            _ = try await bob.expectPresence(from: "alice@localhost/phone")
            let new = try await server.login("alice", resource: "phone")
            let error = try await old.expectStreamError(.conflict)
            #expect(error.text?.isEmpty == false)
            _ = try await bob.expectPresence(from: "alice@localhost/phone", type: "unavailable")
            try await bob.sendMessage(to: "alice@localhost/phone", id: "after")
            try await new.expectMessage(id: "after")
            try await bob.expectNothingPending()
        }
    }

    /// The same, with the new session not yet available: the message to the old full JID
    /// is for the new session (same full JID) — and to the bare JID it is stored.
    @Test func afterAReplacementMessagesAreNotLost() async throws {
        try await TestServer.with { server in
            let old = try await server.im("alice", "phone")
            let bob = try await server.login("bob", resource: "r")
            let new = try await server.login("alice", resource: "phone")
            try await old.expectStreamError(.conflict)
            try await bob.sendMessage(to: "alice@localhost", id: "bare")
            try await bob.expectNothingPending("stored for alice, not refused")
            try await new.expectNothingPending("not available yet")
            try await new.available()
            let stored = try await new.expectMessage(id: "bare")
            #expect(stored.firstChild("delay", namespace: IM.delay) != nil)
        }
    }

    /// on_same_resource = reject: the new bind fails with `<conflict/>`, the old session
    /// carries on.
    @Test func rejectRefusesTheSecondBind() async throws {
        try await TestServer.with({ $0.sessions.onSameResource = .reject }) { server in
            let old = try await server.im("alice", "phone")
            let client = try await server.connect()
            try await client.secureStream()
            #expect(try await client.authenticateSCRAM(username: "alice", password: "alice-password") == .success)
            try await client.openStream()
            let reply = try await client.bind(resource: "phone")
            #expect(reply.type == "error" && reply.stanzaErrorCondition == .conflict)
            try await old.expectNothingPending()
            // Another resource is fine.
            let other = try await client.bind(resource: "tablet", id: "bind-2")
            #expect(other.type == "result")
        }
    }

    /// single_device: a new login ends every other session of the account with the
    /// "another device" text; contacts see each go unavailable; a message to a kicked full
    /// JID reaches the new session by the bare-JID rules.
    @Test func singleDeviceKicksEveryOtherSession() async throws {
        try await TestServer.with({ $0.sessions.singleDevice = true }) { server in
            try await Subscribe.establish(server, "bob", to: "alice")
            let bob = try await server.im("bob")
            // Under single_device, each login kicks the one before.
            let phone = try await server.im("alice", "phone")
            _ = try await bob.expectPresence(from: "alice@localhost/phone")
            let laptop = try await server.login("alice", resource: "laptop")
            let error = try await phone.expectStreamError(.conflict)
            #expect(error.text?.contains("another device") == true, "\(error.text ?? "")")
            _ = try await bob.expectPresence(from: "alice@localhost/phone", type: "unavailable")
            _ = try await laptop.rosterGet()
            try await laptop.available()
            _ = try await bob.expectPresence(from: "alice@localhost/laptop")
            try await bob.sendMessage(to: "alice@localhost/phone", id: "to-old")
            #expect(try await laptop.expectMessage(id: "to-old").to == "alice@localhost/phone")
            let desk = try await server.login("alice", resource: "desk")
            #expect(try await laptop.expectStreamError(.conflict).text?.contains("another device") == true)
            _ = try await bob.expectPresence(from: "alice@localhost/laptop", type: "unavailable")
            try await bob.sendMessage(to: "alice@localhost/laptop", id: "stored")
            try await bob.expectNothingPending("stored: desk is not available yet")
            try await desk.available()
            try await desk.expectMessage(id: "stored")
        }
    }

    /// max_per_account: one session too many is refused with resource-constraint; taking
    /// over an existing resource still works at the limit.
    @Test func maxPerAccountRefusesOneSessionTooMany() async throws {
        try await TestServer.with({ $0.sessions.maxPerAccount = 2 }) { server in
            let first = try await server.login("alice", resource: "one")
            _ = try await server.login("alice", resource: "two")
            let client = try await server.connect()
            try await client.secureStream()
            #expect(try await client.authenticateSCRAM(username: "alice", password: "alice-password") == .success)
            try await client.openStream()
            let reply = try await client.bind(resource: "three")
            #expect(reply.type == "error" && reply.stanzaErrorCondition == .resourceConstraint)
            let replace = try await client.bind(resource: "one", id: "bind-2")
            #expect(replace.type == "result")
            try await first.expectStreamError(.conflict)
            // Another account is not affected.
            _ = try await server.login("bob", resource: "three")
        }
    }
}
