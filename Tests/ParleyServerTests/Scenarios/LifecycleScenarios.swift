import ParleyCore
import ParleyServer
import Testing

/// How sessions end without a client's say: idleness (XEP-0199 ping, then
/// `connection-timeout`) and a graceful server shutdown (`system-shutdown`).
@Suite struct LifecycleScenarios {
    /// Short, but long enough that a login on a machine busy with builds is not idle.
    private static func shortKeepalive(_ configuration: inout ServerConfiguration) {
        configuration.keepalive.pingAfter = .seconds(2)
        configuration.keepalive.idleTimeout = .seconds(4)
    }

    @Test func anIdleClientIsPingedAndTimedOutIfItDoesNotAnswer() async throws {
        try await TestServer.with(Self.shortKeepalive) { server in
            // The idle clock starts at the client's last byte, the bind request, after this.
            let clock = ContinuousClock()
            let start = clock.now
            let alice = try await server.login("alice", resource: "idle")
            let ping = try await alice.expect("iq")
            #expect(clock.now - start >= .seconds(2))
            #expect(ping.type == "get" && ping.from == "localhost" && ping.to == "alice@localhost/idle")
            #expect(ping.firstChild("ping", namespace: "urn:xmpp:ping") != nil)
            let error = try await alice.expectStreamError(.connectionTimeout)
            #expect(clock.now - start >= .seconds(4))
            #expect(error.text?.isEmpty == false)
        }
    }

    @Test func answeringThePingKeepsTheSessionAlive() async throws {
        try await TestServer.with(Self.shortKeepalive) { server in
            let alice = try await server.login("alice", resource: "awake")
            let ping = try await alice.expect("iq")
            let id = try #require(ping.id)
            try await alice.send("<iq type='result' id='\(id)' to='localhost'/>")
            // The answer is consumed by the session, not routed or bounced; and the idle
            // clock starts over, so the next thing is another ping, not a timeout.
            let again = try await alice.expect("iq")
            #expect(again.firstChild("ping", namespace: "urn:xmpp:ping") != nil && again.id != id)
        }
    }

    @Test func aQuietStreamGetsWhitespaceKeepalives() async throws {
        try await TestServer.with({ $0.keepalive.whitespaceInterval = .milliseconds(300) }) { server in
            let alice = try await server.login("alice")
            let before = alice.events.rawText
            try await Task.sleep(for: .milliseconds(800))
            let after = alice.events.rawText
            #expect(after.count > before.count && after.hasPrefix(before))
            #expect(after.dropFirst(before.count).allSatisfy { $0 == " " })
            // Whitespace is not an event: nothing else arrived.
            try await alice.expectSilence(for: .milliseconds(10))
        }
    }

    /// RFC 6120 §4.6.1 whitespace goes between elements of an open stream; before a stream
    /// header (the first, or after STARTTLS or SASL) it would precede the XML declaration and
    /// make the new stream ill-formed.
    @Test func noWhitespaceKeepaliveBeforeAStreamHeader() async throws {
        try await TestServer.with({ $0.keepalive.whitespaceInterval = .milliseconds(200) }) { server in
            let client = try await server.connect()
            try await Task.sleep(for: .milliseconds(500))
            try await client.openStream()
            try await client.send("<starttls xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>")
            try await client.expect("proceed", namespace: XMLNamespace.tls)
            try await Task.sleep(for: .milliseconds(500))
            try await client.upgradeToTLS()
            try await Task.sleep(for: .milliseconds(500))
            try await client.openStream()
            #expect(try await client.authenticateSCRAM(username: "alice", password: "alice-password") == .success)
            try await Task.sleep(for: .milliseconds(500))
            let features = try await client.openStream()
            #expect(features.firstChild("bind", namespace: XMLNamespace.bind) != nil)
        }
    }

    @Test func aClientClosingItsStreamIsAnsweredAndItsSessionEnds() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice", resource: "leaving")
            let bob = try await server.login("bob")
            try await alice.send("</stream:stream>")
            try await alice.expectStreamEnd()
            try await bob.send("<iq type='get' id='gone' to='alice@localhost/leaving'><ping xmlns='urn:xmpp:ping'/></iq>")
            let reply = try await bob.expect("iq")
            #expect(reply.id == "gone" && reply.stanzaErrorCondition == .serviceUnavailable)
        }
    }

    @Test func shutdownTellsEveryConnectionAndReturnsWithinTheGracePeriod() async throws {
        let server = try await TestServer.start()
        let alice = try await server.login("alice")
        let unauthenticated = try await server.connect()
        try await unauthenticated.openStream()
        let clock = ContinuousClock()
        let start = clock.now
        await server.running.shutdown()
        let took = clock.now - start
        let error = try await alice.expectStreamError(.systemShutdown)
        #expect(error.text?.isEmpty == false)
        try await unauthenticated.expectStreamError(.systemShutdown)
        // Clients that close promptly let shutdown finish well before the grace period.
        #expect(took < server.configuration.shutdown.gracePeriod)
        await server.stop()
    }
}
