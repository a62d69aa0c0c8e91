import Foundation
import ParleyCore
import ParleyStorage
import ParleyTestSupport
import Testing

/// XEP-0012 last activity on the wire: a contact's last logout and last words for those
/// entitled to its presence, 0 while it is online, forbidden to anyone else, the server's
/// uptime, one's own, and gone with the account.
@Suite struct LastActivityScenarios {
    static let namespace = "jabber:iq:last"

    static func query(_ client: TestClient, to: String? = nil, id: String = "last") async throws -> XMLElement {
        let address = to.map { " to='\($0)'" } ?? ""
        return try await client.query("<iq type='get' id='\(id)'\(address)><query xmlns='jabber:iq:last'/></iq>", id: id)
    }

    /// The answer's seconds and text; fails the test for anything but a result.
    static func answer(_ reply: XMLElement, sourceLocation: SourceLocation = #_sourceLocation) throws -> (seconds: Int, text: String) {
        #expect(reply.type == "result", "\(reply.xmlString())", sourceLocation: sourceLocation)
        let query = try #require(reply.firstChild("query", namespace: namespace), "\(reply.xmlString())", sourceLocation: sourceLocation)
        try SchemaValidator.shared.validate(query.xmlString())
        let seconds = try #require(query[attribute: "seconds"].flatMap { Int($0) }, "\(reply.xmlString())", sourceLocation: sourceLocation)
        return (seconds, query.text)
    }

    @Test func aSubscriberLearnsWhenTheContactLeftAndWhatItSaid() async throws {
        try await TestServer.with { server in
            // alice is subscribed to bob's presence: bob's roster has her as 'from'.
            try await Subscribe.establish(server, "alice", to: "bob")
            let setup = try await server.lastActivityRecorded("bob")
            let bob = try await server.im("bob")
            try await bob.send("<presence type='unavailable'><status>Heading home</status></presence>")
            // Handled before the connection goes: a stanza still held behind earlier work
            // when the socket closes is never read.
            try await bob.sync()
            try await server.disconnect("bob", bob)
            try await server.waitForNewLastActivity("bob", replacing: setup)

            let alice = try await server.login("alice", resource: "r")
            let reply = try await Self.query(alice, to: "bob@localhost")
            #expect(reply.from == "bob@localhost" && reply.to == "alice@localhost/r")
            let (seconds, text) = try Self.answer(reply)
            #expect((0...60).contains(seconds) && text == "Heading home", "\(reply.xmlString())")

            // The seconds count from the logout: an hour ago reads as 3600.
            try await server.running.storage.setLastActivity(
                LastActivity(loggedOutAt: Date().addingTimeInterval(-3_600), status: "Gone fishing"), for: "bob")
            let later = try Self.answer(try await Self.query(alice, to: "bob@localhost", id: "l2"))
            #expect((3_600...3_605).contains(later.seconds) && later.text == "Gone fishing", "\(later)")
        }
    }

    @Test func aDroppedConnectionLeavesNoStatusButATime() async throws {
        try await TestServer.with { server in
            try await Subscribe.establish(server, "alice", to: "bob")
            let setup = try await server.lastActivityRecorded("bob")
            let bob = try await server.im("bob", available: true)
            // Words of an unavailable presence taken back by coming online again are not
            // the last words.
            try await bob.send("<presence type='unavailable'><status>brb</status></presence>")
            try await bob.expectPresence(from: "bob@localhost/r", type: "unavailable")
            try await bob.available()
            try await bob.sync()
            try await server.disconnect("bob", bob)
            try await server.waitForNewLastActivity("bob", replacing: setup)
            let alice = try await server.login("alice")
            let reply = try await Self.query(alice, to: "bob@localhost")
            let (seconds, text) = try Self.answer(reply)
            #expect((0...60).contains(seconds) && text.isEmpty, "\(reply.xmlString())")
            #expect(reply.firstChild("query", namespace: Self.namespace)?.children.isEmpty == true)
        }
    }

    @Test func anOnlineContactWasActiveZeroSecondsAgo() async throws {
        try await TestServer.with { server in
            try await Subscribe.establish(server, "alice", to: "bob")
            // The set-up session's logout is written first, so it cannot overwrite this one.
            _ = try await server.lastActivityRecorded("bob")
            try await server.running.storage.setLastActivity(
                LastActivity(loggedOutAt: Date().addingTimeInterval(-600), status: "old"), for: "bob")
            let bob = try await server.im("bob")
            let alice = try await server.login("alice")
            let reply = try await Self.query(alice, to: "bob@localhost")
            let (seconds, text) = try Self.answer(reply)
            #expect(seconds == 0 && text.isEmpty, "\(reply.xmlString())")
            // Not yet available (no initial presence) counts as offline.
            try await bob.send("<presence type='unavailable'/>")
            try await bob.sync()
            let offline = try Self.answer(try await Self.query(alice, to: "bob@localhost", id: "l2"))
            // 600 s plus however long the steps above took on a loaded machine.
            #expect((600...660).contains(offline.seconds) && offline.text == "old", "\(offline)")
        }
    }

    /// A shutdown ends every session; their logouts are written before the server stops,
    /// so the restarted server still knows them.
    @Test func logoutsAtShutdownSurviveTheRestart() async throws {
        try await TestServer.with { server in
            try await Subscribe.establish(server, "alice", to: "bob")
            _ = try await server.lastActivityRecorded("bob")
            let bob = try await server.im("bob")
            try await bob.send("<presence type='unavailable'><status>Maintenance tonight</status></presence>")
            try await bob.sync()
            try await server.restart()
            let alice = try await server.login("alice")
            let (seconds, text) = try Self.answer(try await Self.query(alice, to: "bob@localhost"))
            #expect((0...60).contains(seconds) && text == "Maintenance tonight", "\(seconds) \(text)")
        }
    }

    @Test func thoseNotEntitledToThePresenceAreForbidden() async throws {
        try await TestServer.with(accounts: TestServer.threeAccounts) { server in
            // alice sees bob's presence; bob does not see alice's ('to' is the wrong way).
            try await Subscribe.establish(server, "alice", to: "bob")
            for user in ["alice", "bob"] {
                _ = try await server.lastActivityRecorded(user)
                try await server.running.storage.setLastActivity(LastActivity(loggedOutAt: Date(), status: "bye"), for: user)
            }
            let bob = try await server.login("bob")
            let carol = try await server.login("carol")
            for (client, target) in [(carol, "bob@localhost"), (bob, "alice@localhost"), (carol, "nobody@localhost")] {
                let reply = try await Self.query(client, to: target)
                #expect(reply.type == "error" && reply.stanzaErrorCondition == .forbidden, "\(target): \(reply.xmlString())")
                #expect(reply.firstChild("query") == nil, "nothing of the answer leaks")
            }
        }
    }

    @Test func theServerAnswersItsUptime() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            let reply = try await Self.query(alice, to: "localhost")
            #expect(reply.from == "localhost")
            let (seconds, text) = try Self.answer(reply)
            #expect((0...60).contains(seconds) && text.isEmpty, "\(reply.xmlString())")
        }
    }

    @Test func oneSeesOnesOwnLastLogoutAndAFullJIDIsAskedItself() async throws {
        try await TestServer.with { server in
            let first = try await server.im("alice", "phone")
            try await first.send("<presence type='unavailable'><status>Off to bed</status></presence>")
            try await first.sync()
            try await server.disconnect("alice", first)
            _ = try await server.lastActivityRecorded("alice")
            let alice = try await server.login("alice", resource: "laptop")
            let own = try Self.answer(try await Self.query(alice))
            #expect((0...60).contains(own.seconds) && own.text == "Off to bed", "\(own)")

            // A full JID is the client's to answer: the query reaches it.
            let bob = try await server.login("bob", resource: "r")
            try await bob.send("<iq type='get' id='idle' to='alice@localhost/laptop'><query xmlns='jabber:iq:last'/></iq>")
            let forwarded = try await alice.expect("iq")
            #expect(forwarded.id == "idle" && forwarded.type == "get" && forwarded.from == "bob@localhost/r")
        }
    }

    @Test func deletingAnAccountForgetsItsProfileAndLastActivity() async throws {
        try await TestServer.with { server in
            let alice = try await server.im("alice")
            #expect(try await VCardScenarios.set(alice, VCardScenarios.vCard).type == "result")
            #expect(try await PrivateStorageScenarios.request(alice, "set", PrivateStorageScenarios.bookmarks).type == "result")
            try await server.disconnect("alice", alice)
            _ = try await server.lastActivityRecorded("alice")

            // As `parleyd deluser` does, while alice is offline.
            #expect(try await server.running.storage.deleteAccount(username: "alice", origin: .admin))
            try await server.createAccount("alice", password: "alice-password")
            let again = try await server.login("alice")
            #expect(try await VCardScenarios.get(again).elements == [XMLElement("vCard", namespace: VCardScenarios.namespace)])
            let bookmarks = try await PrivateStorageScenarios.request(again, "get", "<storage xmlns='storage:bookmarks'/>")
            #expect(try PrivateStorageScenarios.stored(bookmarks) == [XMLElement("storage", namespace: "storage:bookmarks")])
            let last = try await Self.query(again)
            #expect(last.type == "error" && last.stanzaErrorCondition == .itemNotFound, "\(last.xmlString())")
        }
    }
}

extension TestServer {
    /// The account's stored last logout, waiting for it: it is written just after the
    /// account's last session ends.
    func lastActivityRecorded(_ username: String) async throws -> LastActivity {
        try await waitForNewLastActivity(username, replacing: nil)
    }

    /// Waits until the account's last logout is another than `previous` (a later session
    /// ended) and returns it.
    @discardableResult
    func waitForNewLastActivity(_ username: String, replacing previous: LastActivity?) async throws -> LastActivity {
        let deadline = ContinuousClock.now + TestClient.defaultTimeout
        while true {
            if let current = try await running.storage.lastActivity(of: username), current != previous { return current }
            guard ContinuousClock.now < deadline else { throw ScenarioFailure("no new last activity stored for \(username)") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}
