import ParleyCore
import Testing

/// RFC 6120 §6 over a real TLS stream: each mechanism, each failure condition, the
/// per-address backoff and lockout.
@Suite struct SASLScenarios {
    /// A client on a TLS stream, ready to authenticate.
    private func secureClient(_ server: TestServer) async throws -> TestClient {
        let client = try await server.connect()
        try await client.secureStream()
        return client
    }

    @Test func scramSHA256SucceedsAndTheServerProvesItKnowsTheKeys() async throws {
        try await TestServer.with { server in
            let client = try await secureClient(server)
            // authenticateSCRAM verifies the server signature in <success/>'s additional data.
            #expect(try await client.authenticateSCRAM(.sha256, username: "alice", password: "alice-password") == .success)
            let features = try await client.openStream()
            #expect(features.firstChild("bind", namespace: XMLNamespace.bind) != nil)
            #expect(features.firstChild("mechanisms", namespace: XMLNamespace.sasl) == nil)
        }
    }

    @Test func scramSHA1Succeeds() async throws {
        try await TestServer.with { server in
            let client = try await secureClient(server)
            #expect(try await client.authenticateSCRAM(.sha1, username: "alice", password: "alice-password") == .success)
        }
    }

    @Test func plainSucceedsOverTLS() async throws {
        try await TestServer.with { server in
            let client = try await secureClient(server)
            #expect(try await client.authenticatePLAIN(username: "bob", password: "bob-password") == .success)
            try await client.openStream()
            let reply = try await client.bind(resource: "desk")
            #expect(reply.firstChild("bind", namespace: XMLNamespace.bind)?.firstChild("jid")?.text == "bob@localhost/desk")
        }
    }

    /// RFC 6120 §6.4.2: no initial response means an empty challenge first.
    @Test func mechanismsWorkWithoutAnInitialResponse() async throws {
        try await TestServer.with { server in
            let client = try await secureClient(server)
            try await client.send("<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'/>")
            #expect(try await client.nextSASL() == .challenge([]))
            let message = try PLAINMessage(authcid: "alice", password: "alice-password").encoded()
            try await client.send(SASLElement.response(message).element.xmlString())
            #expect(try await client.nextSASL() == .success(additionalData: nil))

            let other = try await secureClient(server)
            var scram = SCRAMClient(hash: .sha1, username: "bob", password: "bob-password")
            try await other.send("<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='SCRAM-SHA-1'/>")
            #expect(try await other.nextSASL() == .challenge([]))
            try await other.send(SASLElement.response(try scram.clientFirst()).element.xmlString())
            guard case .challenge(let serverFirst) = try await other.nextSASL() else { throw ScenarioFailure("no server-first") }
            try await other.send(SASLElement.response(try scram.receiveServerFirst(serverFirst)).element.xmlString())
            guard case .success(let serverFinal?) = try await other.nextSASL() else { throw ScenarioFailure("no success") }
            try scram.receiveServerFinal(serverFinal)
            #expect(scram.isAuthenticated)
        }
    }

    @Test func aWrongPasswordIsNotAuthorizedAndEachFailureIsAnsweredMoreSlowly() async throws {
        try await TestServer.with { server in
            let client = try await secureClient(server)
            let clock = ContinuousClock()
            var outcome: TestClient.SASLOutcome = .success
            let first = try await clock.measure {
                outcome = try await client.authenticateSCRAM(username: "alice", password: "wrong-password")
            }
            #expect(outcome.failureCondition == .notAuthorized)
            #expect(first >= .milliseconds(240))
            let second = try await clock.measure {
                outcome = try await client.authenticatePLAIN(username: "alice", password: "wrong-password")
            }
            #expect(outcome.failureCondition == .notAuthorized)
            #expect(second >= .milliseconds(490))
            // A correct attempt afterwards still works on the same stream.
            #expect(try await client.authenticateSCRAM(username: "alice", password: "alice-password") == .success)
        }
    }

    @Test func anUnknownUserFailsExactlyLikeAWrongPassword() async throws {
        try await TestServer.with { server in
            let wrongPassword = try await secureClient(server)
            let known = try await wrongPassword.authenticateSCRAM(username: "alice", password: "nope-nope")
            let unknownUser = try await secureClient(server)
            let unknown = try await unknownUser.authenticateSCRAM(username: "mallory", password: "nope-nope")
            #expect(known.failureCondition == .notAuthorized)
            #expect(known == unknown)
            let plainUnknown = try await unknownUser.authenticatePLAIN(username: "mallory", password: "nope-nope")
            #expect(plainUnknown == known)
        }
    }

    /// With a non-default iteration count, the challenge for an unknown user must still look
    /// like one for a real account, or it tells an attacker which usernames exist.
    @Test func theChallengeForAnUnknownUserHasTheConfiguredIterationCount() async throws {
        try await TestServer.with({ $0.auth.scramIterations = 5000 }) { server in
            var iterations: [String: Int] = [:]
            var saltLengths: [String: Int] = [:]
            for username in ["alice", "mallory"] {
                let client = try await secureClient(server)
                var scram = SCRAMClient(hash: .sha256, username: username, password: "whatever-it-is")
                try await client.send(
                    SASLElement.auth(mechanism: "SCRAM-SHA-256", initialResponse: try scram.clientFirst()).element.xmlString())
                guard case .challenge(let serverFirst) = try await client.nextSASL() else { throw ScenarioFailure("no challenge") }
                _ = try scram.receiveServerFirst(serverFirst)
                iterations[username] = scram.serverIterations
                saltLengths[username] = scram.serverSalt?.count
            }
            #expect(iterations["alice"] == 5000)
            #expect(iterations["mallory"] == iterations["alice"])
            #expect(saltLengths["mallory"] == saltLengths["alice"])
        }
    }

    /// PLAIN for an unknown user must cost the server the same PBKDF2 as a wrong password for
    /// a real one, or the time to answer tells which usernames exist. With a high iteration
    /// count that cost (measured on a successful login) dwarfs the noise.
    @Test func plainForAnUnknownUserTakesAsLongAsForARealOne() async throws {
        try await TestServer.with(accounts: ["alice": "alice-password"], { $0.auth.scramIterations = 400_000 }) { server in
            let clock = ContinuousClock()
            var outcomes: [TestClient.SASLOutcome] = []
            let client = try await secureClient(server)
            let known = try await clock.measure {
                outcomes.append(try await client.authenticatePLAIN(username: "alice", password: "wrong-password"))
            }
            // A success resets the address's backoff, so both failures get the same delay. The
            // quickest of three is the best estimate of one PBKDF2 on a busy machine.
            var pbkdf2 = Duration.seconds(60)
            for _ in 0..<3 {
                let client = try await secureClient(server)
                pbkdf2 = min(pbkdf2, try await clock.measure {
                    outcomes.append(try await client.authenticatePLAIN(username: "alice", password: "alice-password"))
                })
            }
            let other = try await secureClient(server)
            let unknown = try await clock.measure {
                outcomes.append(try await other.authenticatePLAIN(username: "mallory", password: "wrong-password"))
            }
            #expect(outcomes.map(\.failureCondition) == [.notAuthorized, nil, nil, nil, .notAuthorized])
            // Both failures wait the first backoff step (250 ms) on top of their PBKDF2 (a
            // quarter of it is all a machine shared with builds lets us count on).
            #expect(known >= .milliseconds(250) + pbkdf2 / 4, "known user: \(known), one PBKDF2: \(pbkdf2)")
            #expect(unknown >= .milliseconds(250) + pbkdf2 / 4, "unknown user: \(unknown), one PBKDF2: \(pbkdf2)")
        }
    }

    @Test func anUnknownMechanismIsInvalidMechanism() async throws {
        try await TestServer.with { server in
            let client = try await secureClient(server)
            try await client.send("<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='DIGEST-MD5'/>")
            guard case .failure(let failure) = try await client.nextSASL() else { throw ScenarioFailure("no failure") }
            #expect(failure.condition == .invalidMechanism)
        }
    }

    @Test func badBase64IsIncorrectEncoding() async throws {
        try await TestServer.with { server in
            let client = try await secureClient(server)
            try await client.send("<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>%%%not-base64%%%</auth>")
            guard case .failure(let failure) = try await client.nextSASL() else { throw ScenarioFailure("no failure") }
            #expect(failure.condition == .incorrectEncoding)
        }
    }

    @Test func abortMidExchangeIsAbortedAndAuthenticationCanStartOver() async throws {
        try await TestServer.with { server in
            let client = try await secureClient(server)
            var scram = SCRAMClient(hash: .sha256, username: "alice", password: "alice-password")
            try await client.send(SASLElement.auth(mechanism: "SCRAM-SHA-256", initialResponse: try scram.clientFirst()).element.xmlString())
            guard case .challenge = try await client.nextSASL() else { throw ScenarioFailure("no challenge") }
            try await client.send("<abort xmlns='urn:ietf:params:xml:ns:xmpp-sasl'/>")
            guard case .failure(let failure) = try await client.nextSASL() else { throw ScenarioFailure("no failure") }
            #expect(failure.condition == .aborted)
            #expect(try await client.authenticateSCRAM(username: "alice", password: "alice-password") == .success)
        }
    }

    @Test func anAuthzidOfAnotherUserIsInvalidAuthzid() async throws {
        try await TestServer.with { server in
            let client = try await secureClient(server)
            let plain = try await client.authenticatePLAIN(username: "alice", password: "alice-password", authzid: "bob@localhost")
            #expect(plain.failureCondition == .invalidAuthzid)
            let scram = try await client.authenticateSCRAM(username: "alice", password: "alice-password", authzid: "bob@localhost")
            #expect(scram.failureCondition == .invalidAuthzid)
            // Naming oneself is allowed.
            let own = try await client.authenticatePLAIN(username: "alice", password: "alice-password", authzid: "alice@localhost")
            #expect(own == .success)
        }
    }

    @Test func afterTooManyFailuresFromAnAddressTheNextAttemptIsAPolicyViolation() async throws {
        try await TestServer.with({ $0.limits.authFailuresPerIP = 2 }) { server in
            let client = try await secureClient(server)
            for _ in 0..<2 {
                let outcome = try await client.authenticatePLAIN(username: "alice", password: "wrong-password")
                #expect(outcome.failureCondition == .notAuthorized)
            }
            try await client.send(SASLElement.auth(mechanism: "PLAIN", initialResponse: nil).element.xmlString())
            let error = try await client.expectStreamError(.policyViolation)
            #expect(error.text?.contains("failed authentication") == true)
            // The lockout is per address, not per connection, and the right password does not lift it.
            let another = try await secureClient(server)
            try await another.send(
                SASLElement.auth(
                    mechanism: "PLAIN", initialResponse: try PLAINMessage(authcid: "alice", password: "alice-password").encoded()
                ).element.xmlString())
            try await another.expectStreamError(.policyViolation)
        }
    }
}
