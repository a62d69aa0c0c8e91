import ParleyCore
import ParleyServer
import ParleyStorage
import Testing

/// XEP-0077 in-band registration, password change and removal, and removal by an
/// administrator from another process while the user is online.
@Suite struct RegistrationScenarios {
    static let namespace = "jabber:iq:register"

    private func registration(username: String, password: String, id: String) -> String {
        "<iq type='set' id='\(id)'><query xmlns='\(Self.namespace)'><username>\(username)</username><password>\(password)</password></query></iq>"
    }

    private func canLogIn(_ server: TestServer, _ username: String, _ password: String) async throws -> Bool {
        let client = try await server.connect()
        try await client.secureStream()
        return try await client.authenticateSCRAM(username: username, password: password) == .success
    }

    @Test func whenEnabledTheFormIsServedAndANewAccountCanLogIn() async throws {
        try await TestServer.with({ $0.registration.enabled = true }) { server in
            let client = try await server.connect()
            try await client.secureStream()
            let form = try await client.query("<iq type='get' id='r1'><query xmlns='\(Self.namespace)'/></iq>", id: "r1")
            let query = try #require(form.firstChild("query", namespace: Self.namespace))
            #expect(form.type == "result")
            #expect(query.firstChild("username", namespace: Self.namespace) != nil)
            #expect(query.firstChild("password", namespace: Self.namespace) != nil)
            let created = try await client.query(registration(username: "carol", password: "carol-password", id: "r2"), id: "r2")
            #expect(created.type == "result")
            #expect(try await client.authenticateSCRAM(username: "carol", password: "carol-password") == .success)
            #expect(try await canLogIn(server, "carol", "carol-password"))
        }
    }

    @Test func registrationBeforeTLSIsRefusedWhileTLSIsRequired() async throws {
        try await TestServer.with({ $0.registration.enabled = true }) { server in
            let client = try await server.connect()
            try await client.openStream()
            let reply = try await client.query(registration(username: "carol", password: "carol-password", id: "r0"), id: "r0")
            #expect(reply.type == "error" && reply.stanzaErrorCondition == .notAuthorized)
            #expect(try await !canLogIn(server, "carol", "carol-password"))
        }
    }

    @Test func aTakenUsernameIsAConflict() async throws {
        try await TestServer.with({ $0.registration.enabled = true }) { server in
            let client = try await server.connect()
            try await client.secureStream()
            let reply = try await client.query(registration(username: "alice", password: "another-password", id: "r3"), id: "r3")
            #expect(reply.type == "error" && reply.stanzaErrorCondition == .conflict)
            #expect(try await canLogIn(server, "alice", "alice-password"))
        }
    }

    @Test func aShortPasswordIsNotAcceptable() async throws {
        try await TestServer.with({ $0.registration.enabled = true }) { server in
            let client = try await server.connect()
            try await client.secureStream()
            let reply = try await client.query(registration(username: "dave", password: "short", id: "r4"), id: "r4")
            #expect(reply.type == "error" && reply.stanzaErrorCondition == .notAcceptable)
        }
    }

    @Test func whenDisabledRegistrationIsServiceUnavailable() async throws {
        try await TestServer.with { server in
            let client = try await server.connect()
            try await client.secureStream()
            let form = try await client.query("<iq type='get' id='r5'><query xmlns='\(Self.namespace)'/></iq>", id: "r5")
            #expect(form.type == "error" && form.stanzaErrorCondition == .serviceUnavailable)
            let create = try await client.query(registration(username: "erin", password: "erin-password", id: "r6"), id: "r6")
            #expect(create.type == "error" && create.stanzaErrorCondition == .serviceUnavailable)
            #expect(try await !canLogIn(server, "erin", "erin-password"))
        }
    }

    @Test func anAuthenticatedUserCanChangeThePassword() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            let reply = try await alice.query(registration(username: "alice", password: "brand-new-password", id: "c1"), id: "c1")
            #expect(reply.type == "result")
            #expect(try await canLogIn(server, "alice", "brand-new-password"))
            #expect(try await !canLogIn(server, "alice", "alice-password"))
            // Changing one's own password does not end the session that did it.
            let pong = try await alice.query("<iq type='get' id='p1'><ping xmlns='urn:xmpp:ping'/></iq>", id: "p1")
            #expect(pong.type == "result")
        }
    }

    @Test func anAuthenticatedGetShowsTheAccountAsRegistered() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            let reply = try await alice.query("<iq type='get' id='g1'><query xmlns='\(Self.namespace)'/></iq>", id: "g1")
            let query = try #require(reply.firstChild("query", namespace: Self.namespace))
            #expect(query.firstChild("registered", namespace: Self.namespace) != nil)
            #expect(query.firstChild("username", namespace: Self.namespace)?.text == "alice")
        }
    }

    @Test func nobodyCanChangeOrRemoveAnotherAccount() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            let viaServer = try await alice.query(registration(username: "bob", password: "taken-over-1", id: "h1"), id: "h1")
            #expect(viaServer.type == "error" && viaServer.stanzaErrorCondition == .notAllowed)
            let toBob = registration(username: "bob", password: "taken-over-2", id: "h2")
                .replacingOccurrences(of: "<iq type='set'", with: "<iq type='set' to='bob@localhost'")
            let viaAccount = try await alice.query(toBob, id: "h2")
            #expect(viaAccount.type == "error")
            let remove = try await alice.query(
                "<iq type='set' id='h3' to='bob@localhost'><query xmlns='\(Self.namespace)'><remove/></query></iq>", id: "h3")
            #expect(remove.type == "error")
            #expect(try await canLogIn(server, "bob", "bob-password"))
        }
    }

    @Test func removingTheAccountAnswersThenEndsTheStream() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            let reply = try await alice.query("<iq type='set' id='x1'><query xmlns='\(Self.namespace)'><remove/></query></iq>", id: "x1")
            #expect(reply.type == "result")
            let error = try await alice.expectStreamError(.notAuthorized)
            #expect(error.text?.contains("removed") == true)
            #expect(try await !canLogIn(server, "alice", "alice-password"))
        }
    }

    @Test func anAccountDeletedByAnAdministratorIsSignedOut() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            let bob = try await server.login("bob")
            // Another process (parleyd deluser) on the same database file.
            let admin = try SQLiteStorage(path: server.configuration.sqlitePath)
            #expect(try await admin.deleteAccount(username: "alice", origin: .admin))
            let error = try await alice.expectStreamError(.notAuthorized)
            #expect(error.text?.contains("removed") == true)
            try await bob.expectSilence(for: .milliseconds(100))
        }
    }

    @Test func aPasswordResetByAnAdministratorSignsTheUserOut() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            let admin = try SQLiteStorage(path: server.configuration.sqlitePath)
            let keys = try AccountKeys.derive(password: "reset-by-admin", iterations: 4096)
            try await admin.updateKeys(username: "alice", keys: keys, origin: .admin)
            let error = try await alice.expectStreamError(.notAuthorized)
            #expect(error.text?.contains("administrator") == true)
            #expect(try await canLogIn(server, "alice", "reset-by-admin"))
        }
    }
}
