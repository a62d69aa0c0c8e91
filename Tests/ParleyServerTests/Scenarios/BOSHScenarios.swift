import Foundation
import NIOHTTP1
import ParleyCore
import ParleyServer
import ParleyTestSupport
import Testing

/// XMPP over BOSH (XEP-0124/0206) on the HTTP service, over real HTTP on loopback: the session
/// life cycle, from the creation request strophe.js sends to its end from either side.
@Suite struct BOSHScenarios {
    /// A server with ParleyHTTP (plain HTTP on loopback) serving the BOSH endpoint.
    static func with<T>(
        _ configure: @escaping (inout ServerConfiguration) -> Void = { _ in }, _ body: (TestServer, Int) async throws -> T
    ) async throws -> T {
        try await WebSocketScenarios.with(configure, body)
    }

    /// Alice signed in over BOSH with a request held, and what that request gets when the
    /// server shuts down (with her client, for what it asks next).
    static func heldRequestAnsweredByShutdown(of server: TestServer, port: Int) async throws -> (BOSHTestClient, BOSHTestClient.Answer) {
        let web = BOSHTestClient(port: port, wait: 30)
        try await web.login("alice")
        try await web.settle()
        let held = Task { try await web.request() }
        try await Task.sleep(for: .milliseconds(200))
        await server.running.shutdown()
        return (web, try await held.value)
    }

    @Test func creationAnswersWithTheTermsTheStreamIdAndTheFeatures() async throws {
        try await Self.with { _, port in
            let client = BOSHTestClient(port: port)
            let answer = try await client.create(wait: 60, hold: 1, extra: "ack='1'")
            #expect(answer.status == 200)
            #expect(answer.headers.first(name: "Content-Type") == "text/xml; charset=utf-8")
            #expect(answer.headers.first(name: "Access-Control-Allow-Origin") == "*")
            try SchemaValidator.shared.validate(answer.text)
            let body = try #require(answer.body, "\(answer.text)")
            #expect(body.namespace == BOSHTestClient.httpbind)
            #expect(body[attribute: "sid"]?.count == 32)
            let terms = ["wait", "hold", "requests", "inactivity", "polling", "maxpause", "ver", "from", "secure", "ack"].map { body[attribute: $0] }
            #expect(terms == ["60", "1", "2", "60", "5", "120", "1.6", "localhost", "true", "\(client.nextRID - 1)"], "\(answer.text)")
            #expect(body[attribute: "authid"]?.isEmpty == false)
            #expect(body.attribute("version", namespace: BOSHTestClient.xbosh) == "1.0")
            #expect(body.attribute("restartlogic", namespace: BOSHTestClient.xbosh) == "true")
            // Loopback counts as confidential, as on c2s: PLAIN is offered, STARTTLS is not (XEP-0206 §5).
            let features = try #require(answer.payload.first, "\(answer.text)")
            #expect(features.name == "features" && features.namespace == XMLNamespace.streams)
            #expect(features.firstChild("starttls", namespace: XMLNamespace.tls) == nil)
            let mechanisms = features.firstChild("mechanisms", namespace: XMLNamespace.sasl)?.children("mechanism").map(\.text) ?? []
            #expect(mechanisms.contains("PLAIN") && mechanisms.contains("SCRAM-SHA-256"), "\(answer.text)")
            #expect(answer.text.contains("<stream:features xmlns:stream='http://etherx.jabber.org/streams'>"), "\(answer.text)")
        }
    }

    @Test func aBOSHSessionLogsInBindsAndTalksWithATCPSession() async throws {
        try await Self.with { server, port in
            let bob = try await server.login("bob", resource: "home")
            let web = BOSHTestClient(port: port)
            #expect(try await web.login("alice", resource: "web") == "alice@localhost/web")
            try await bob.send("<message to='alice@localhost/web' type='chat' id='b1'><body>hello bosh</body></message>")
            let received = try await web.expect("message")
            #expect(received[attribute: "from"] == "bob@localhost/home" && received.firstChild("body")?.text == "hello bosh")
            #expect(received.namespace == XMLNamespace.client)
            // A stanza without its own xmlns is jabber:client (XEP-0206 §6), as Prosody reads it.
            try await web.send("<message to='bob@localhost/home' type='chat' id='a1'><body>hello tcp</body></message>")
            let sent = try await bob.expect("message")
            #expect(sent.from == "alice@localhost/web" && sent.firstChild("body")?.text == "hello tcp")
        }
    }

    @Test func aHeldRequestIsAnsweredWhenDataArrivesAndEmptyAfterWait() async throws {
        try await Self.with { server, port in
            let bob = try await server.login("bob", resource: "home")
            let web = BOSHTestClient(port: port, wait: 5)
            try await web.login("alice", resource: "web")
            try await web.settle()
            let held = Task { try await web.request() }
            try await Task.sleep(for: .milliseconds(300))
            let start = ContinuousClock.now
            try await bob.send("<message to='alice@localhost/web' type='chat' id='b1'><body>now</body></message>")
            let answer = try await held.value
            #expect(ContinuousClock.now - start < .seconds(3))
            #expect(answer.payload.first?.firstChild("body")?.text == "now", "\(answer.text)")
            try SchemaValidator.shared.validate(answer.text)

            // Nothing to say: the answer comes after `wait` (5 s here), empty.
            let poll = ContinuousClock.now
            let empty = try await web.request()
            let elapsed = ContinuousClock.now - poll
            #expect(elapsed >= .milliseconds(4900) && elapsed < .seconds(9), "\(elapsed)")
            #expect(empty.text == "<body xmlns='http://jabber.org/protocol/httpbind' xmlns:stream='http://etherx.jabber.org/streams'/>")
        }
    }

    @Test func terminateFromTheClientEndsTheSessionAndItsPresence() async throws {
        try await Self.with { server, port in
            try await Subscribe.establish(server, "bob", to: "alice")
            let bob = try await server.im("bob", "home")
            let web = BOSHTestClient(port: port)
            try await web.login("alice", resource: "web")
            try await web.send("<presence/>")
            try await bob.expectPresence(from: "alice@localhost/web")
            try await web.settle()
            let end = try await web.request("<presence type='unavailable'/>", attributes: "type='terminate'")
            #expect(end.isTerminate && end.condition == nil, "\(end.text)")
            try SchemaValidator.shared.validate(end.text)
            try await bob.expectPresence(from: "alice@localhost/web", type: "unavailable")
            try await server.waitUntilOffline("alice")
            // The session is over: a later request learns so.
            let after = try await web.request()
            #expect(after.isTerminate, "\(after.text)")
        }
    }

    @Test func aStreamErrorEndsTheSessionWithRemoteStreamError() async throws {
        try await Self.with { server, port in
            let web = BOSHTestClient(port: port, wait: 30)
            try await web.login("alice", resource: "same")
            try await web.settle()
            let held = Task { try await web.request() }
            try await Task.sleep(for: .milliseconds(200))
            // The same resource logging in elsewhere replaces this session (RFC 6120 §7.7.2.2).
            _ = try await server.login("alice", resource: "same")
            let answer = try await held.value
            #expect(answer.isTerminate && answer.condition == "remote-stream-error", "\(answer.text)")
            let error = try #require(answer.payload.last)
            #expect(error.name == "error" && error.namespace == XMLNamespace.streams)
            #expect(error.firstChild("conflict", namespace: "urn:ietf:params:xml:ns:xmpp-streams") != nil, "\(answer.text)")
            try SchemaValidator.shared.validate(answer.text)
        }
    }

    @Test func shutdownEndsBOSHSessionsWithSystemShutdown() async throws {
        try await Self.with { server, port in
            let (_, answer) = try await Self.heldRequestAnsweredByShutdown(of: server, port: port)
            #expect(answer.isTerminate && answer.condition == "remote-stream-error", "\(answer.text)")
            #expect(answer.payload.last?.firstChild("system-shutdown") != nil, "\(answer.text)")
        }
    }

    @Test func strophesRestartAndEmptyPollsAreServed() async throws {
        // The requests strophe.js 1.2.14 makes, as it writes them (attributes in its order).
        try await Self.with { _, port in
            let created = try await BOSHTestClient.post(
                port: port,
                "<body rid='1234' xmlns='http://jabber.org/protocol/httpbind' to='localhost' xml:lang='en' wait='60' hold='1' "
                    + "content='text/xml; charset=utf-8' ver='1.6' xmpp:version='1.0' xmlns:xmpp='urn:xmpp:xbosh'/>")
            let sid = try #require(created.body?[attribute: "sid"], "\(created.text)")
            let credentials = Data("\u{0}alice\u{0}alice-password".utf8).base64EncodedString()
            let auth = try await BOSHTestClient.post(
                port: port,
                "<body rid='1235' xmlns='http://jabber.org/protocol/httpbind' sid='\(sid)'>"
                    + "<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>\(credentials)</auth></body>")
            #expect(auth.payload.first?.name == "success", "\(auth.text)")
            let restart = try await BOSHTestClient.post(
                port: port,
                "<body rid='1236' xmlns='http://jabber.org/protocol/httpbind' sid='\(sid)' to='localhost' xml:lang='en' "
                    + "xmpp:restart='true' xmlns:xmpp='urn:xmpp:xbosh'/>")
            #expect(restart.payload.first?.firstChild("bind", namespace: XMLNamespace.bind) != nil, "\(restart.text)")
            let bind = try await BOSHTestClient.post(
                port: port,
                "<body rid='1237' xmlns='http://jabber.org/protocol/httpbind' sid='\(sid)'><iq type='set' id='_bind_auth_2' "
                    + "xmlns='jabber:client'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/></iq></body>")
            #expect(bind.payload.first?[attribute: "type"] == "result", "\(bind.text)")
            let terminate = try await BOSHTestClient.post(
                port: port,
                "<body rid='1238' xmlns='http://jabber.org/protocol/httpbind' sid='\(sid)' type='terminate'>"
                    + "<presence xmlns='jabber:client' type='unavailable'/></body>")
            #expect(terminate.isTerminate, "\(terminate.text)")
        }
    }
}
