import ParleyCore
import Testing

/// Each limit on what one peer may cost the server ends in its stream error, or, for the
/// stanza rate, in shaping that drops nothing.
@Suite struct LimitScenarios {
    @Test func aStanzaOverMaxStanzaBytesIsAPolicyViolation() async throws {
        try await TestServer.with({ $0.limits.maxStanzaBytes = 10_000 }) { server in
            let alice = try await server.login("alice")
            // Just under the limit is routed as usual (to an account that does not exist).
            let fits = String(repeating: "a", count: 9_000)
            try await alice.send("<message to='nobody@localhost' id='fits'><body>\(fits)</body></message>")
            let bounced = try await alice.expect("message")
            #expect(bounced.id == "fits" && bounced.stanzaErrorCondition == .serviceUnavailable)
            let body = String(repeating: "x", count: 12_000)
            try await alice.send("<message to='bob@localhost'><body>\(body)</body></message>")
            let error = try await alice.expectStreamError(.policyViolation)
            #expect(error.text?.contains("10000") == true)
        }
    }

    @Test func theConnectionOverThePerAddressLimitIsRefusedAfterItsHeader() async throws {
        try await TestServer.with({ $0.limits.connectionsPerIP = 2 }) { server in
            let first = try await server.connect()
            try await first.openStream()
            let second = try await server.connect()
            try await second.openStream()
            let third = try await server.connect()
            try await third.send(TestClient.header())
            let header = try await third.expectHeader()
            #expect(header[attribute: "from"] == TestServer.domain)
            let error = try await third.expectStreamError(.policyViolation)
            #expect(error.text?.contains("2") == true)
            // The admitted connections go on; once one closes, a new one is admitted.
            try await first.startTLS()
            await second.close()
            // The server frees the slot when it sees the close, which a loaded machine may
            // take a while to get to: a connection refused meanwhile is tried again.
            let deadline = ContinuousClock.now + .seconds(10)
            while true {
                try await Task.sleep(for: .milliseconds(100))
                let fourth = try await server.connect()
                try await fourth.send(TestClient.header())
                _ = try await fourth.expectHeader()
                let next = try await fourth.nextElement()
                if next.name == "error", ContinuousClock.now < deadline {
                    await fourth.close()
                    continue
                }
                #expect(next.name == "features" && next.firstChild("starttls", namespace: XMLNamespace.tls) != nil)
                break
            }
        }
    }

    @Test func nestingDeeperThanMaxDepthIsAPolicyViolation() async throws {
        try await TestServer.with({ $0.limits.maxDepth = 8 }) { server in
            let alice = try await server.login("alice")
            let depth = 10
            let open = (0..<depth).map { "<x\($0)>" }.joined()
            let close = (0..<depth).reversed().map { "</x\($0)>" }.joined()
            try await alice.send("<message to='bob@localhost'><body>deep</body><nest xmlns='urn:example:nest'>\(open)\(close)</nest></message>")
            try await alice.expectStreamError(.policyViolation)
        }
    }

    @Test func anOversizedStreamHeaderIsAPolicyViolation() async throws {
        try await TestServer.with { server in
            let client = try await server.connect()
            let padding = String(repeating: "p", count: 20_000)
            try await client.send("<?xml version='1.0'?><stream:stream \(TestClient.streamNamespaces) to='localhost' version='1.0' pad='\(padding)'>")
            try await client.expectStreamError(.policyViolation)
        }
    }

    @Test func theConnectionOverTheServerLimitIsResourceConstraint() async throws {
        try await TestServer.with({ $0.limits.maxConnections = 1 }) { server in
            let first = try await server.connect()
            try await first.openStream()
            let second = try await server.connect()
            try await second.send(TestClient.header())
            try await second.expectStreamError(.resourceConstraint)
        }
    }

    @Test func aConnectionThatDoesNotAuthenticateInTimeIsClosed() async throws {
        try await TestServer.with({ $0.limits.unauthenticatedTimeout = .seconds(1) }) { server in
            let clock = ContinuousClock()
            let start = clock.now
            // The client never even opens its stream: on a loaded machine, a header sent after
            // the connect could cross the server's timeout and make the test race.
            let client = try await server.connect()
            let error = try await client.expectStreamError(.connectionTimeout)
            #expect(clock.now - start >= .milliseconds(1_000))
            #expect(error.text?.contains("within 1") == true)
        }
    }

    @Test func aSessionBoundInTimeOutlivesTheUnauthenticatedTimeout() async throws {
        try await TestServer.with({ $0.limits.unauthenticatedTimeout = .seconds(3) }) { server in
            let clock = ContinuousClock()
            let start = clock.now
            let alice: TestClient
            do {
                alice = try await server.login("alice")
            } catch where clock.now - start >= .seconds(3) {
                return  // a machine too loaded to log in within the timeout cannot tell
            }
            try await Task.sleep(until: start + .milliseconds(3_500))
            let pong = try await alice.query("<iq type='get' id='p1' to='localhost'><ping xmlns='urn:xmpp:ping'/></iq>", id: "p1")
            #expect(pong.type == "result")
        }
    }

    /// 10 stanzas a second after a burst of 5: 25 pings in one write take about 2 s, and
    /// every one of them is answered, in order.
    @Test func aFloodOfStanzasIsShapedNotDropped() async throws {
        try await TestServer.with({
            $0.limits.stanzasPerSecond = 10
            $0.limits.stanzaBurst = 5
        }) { server in
            let alice = try await server.login("alice")
            let count = 25
            let pings = (0..<count).map { "<iq type='get' id='f\($0)' to='localhost'><ping xmlns='urn:xmpp:ping'/></iq>" }
            let clock = ContinuousClock()
            let start = clock.now
            try await alice.send(pings.joined())
            for index in 0..<count {
                let reply = try await alice.expect("iq")
                #expect(reply.id == "f\(index)" && reply.type == "result")
            }
            let elapsed = clock.now - start
            // (25 - 5) / 10 per second = 2 s; allow for timer granularity.
            #expect(elapsed >= .milliseconds(1_700), "25 stanzas were answered in \(elapsed)")
            #expect(elapsed < .seconds(5))
        }
    }
}
