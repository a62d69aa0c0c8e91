import Foundation
import ParleyCore
import ParleyServer
import ParleyTestSupport
import Testing

/// The HTTP connections BOSH requests come on, written out byte for byte on one kept-alive
/// connection as a browser keeps it: a connection whose first request is for the BOSH path is
/// answered in its pipeline (no task per held request); one that then asks for another path
/// is still served, and so are its later BOSH requests.
@Suite struct BOSHConnectionScenarios {
    static let httpbind = "http://jabber.org/protocol/httpbind"

    static func creation(rid: Int) -> String {
        "<body xmlns='\(httpbind)' rid='\(rid)' to='localhost' wait='30' hold='1' ver='1.6' xml:lang='en' "
            + "xmpp:version='1.0' xmlns:xmpp='urn:xmpp:xbosh'/>"
    }

    @Test func oneConnectionCarriesBOSHThenAnotherPathThenBOSHAgain() async throws {
        try await BOSHScenarios.with { _, port in
            let connection = try await HTTPTestConnection.open(port: port)
            let created = try await connection.request("POST", "/http-bind", body: Self.creation(rid: 1000))
            #expect(created.status == 200 && created.headers["access-control-allow-origin"] == "*", "\(created)")
            #expect(created.headers["content-type"] == "text/xml; charset=utf-8")
            try SchemaValidator.shared.validate(created.text)
            let body = try #require(BOSHTestClient.parse(created.text), "\(created.text)")
            let sid = try #require(body[attribute: "sid"], "\(created.text)")
            #expect(body.elements.first?.name == "features", "\(created.text)")
            // A CORS preflight on the same connection, answered in the pipeline too.
            let preflight = try await connection.request("OPTIONS", "/http-bind?x=1", headers: [("Origin", "https://web.example")])
            #expect(preflight.status == 200 && preflight.text.isEmpty, "\(preflight)")
            #expect(preflight.headers["access-control-allow-methods"] == "GET, POST, OPTIONS", "\(preflight)")
            // Another path: the connection moves to the router, which serves it.
            let hostMeta = try await connection.request("GET", "/.well-known/host-meta")
            #expect(hostMeta.status == 200 && hostMeta.text.contains("urn:xmpp:alt-connections:xbosh"), "\(hostMeta)")
            // And BOSH again on it, now through the route: the same session, the same rules.
            let wrong = Data("\u{0}alice\u{0}wrong".utf8).base64EncodedString()
            let refused = try await connection.request(
                "POST", "/http-bind",
                body: "<body xmlns='\(Self.httpbind)' rid='1001' sid='\(sid)'><auth xmlns='\(XMLNamespace.sasl)' mechanism='PLAIN'>\(wrong)</auth></body>")
            #expect(refused.status == 200 && refused.text.contains("<not-authorized/>"), "\(refused)")
            let unknown = try await connection.request("POST", "/http-bind", body: "<body xmlns='\(Self.httpbind)' rid='7' sid='nope'/>")
            #expect(BOSHTestClient.parse(unknown.text)?[attribute: "condition"] == "item-not-found", "\(unknown)")
            await connection.close()
        }
    }

    @Test func aHeldRequestIsAnsweredOnItsConnectionAndConnectionCloseIsHonoured() async throws {
        try await BOSHScenarios.with { server, port in
            let bob = try await server.login("bob", resource: "home")
            let web = BOSHTestClient(port: port, wait: 30)
            try await web.login("alice", resource: "web")
            try await web.settle()
            // A request held on a connection of its own, released by a message from TCP.
            let connection = try await HTTPTestConnection.open(port: port)
            let held = Task {
                try await connection.request("POST", "/http-bind", body: web.body(rid: web.takeRID()), headers: [("Connection", "close")])
            }
            try await Task.sleep(for: .milliseconds(300))
            try await bob.send("<message to='alice@localhost/web' type='chat' id='b1'><body>to the held one</body></message>")
            let answer = try await held.value
            let message = try #require(BOSHTestClient.parse(answer.text)?.elements.first, "\(answer.text)")
            #expect(message.name == "message" && message.firstChild("body")?.text == "to the held one", "\(answer.text)")
            #expect(answer.headers["connection"] == "close", "\(answer)")
            // A bound, not a timing: the server closes right after the answer. In loaded full
            // runs the close was once not seen within 5 s and once not within 30 s, so the
            // bound is not what makes this test fail now and then; the cause is not found yet.
            #expect(await connection.closes(within: .seconds(30)), "the connection stayed open after Connection: close")
        }
    }

    @Test func anOversizedBodyOnAFreshConnectionIsAPolicyViolation() async throws {
        try await BOSHScenarios.with({ $0.http.bosh.maxBodyBytes = 1024 }) { _, port in
            let connection = try await HTTPTestConnection.open(port: port)
            let padding = String(repeating: "x", count: 2000)
            let answer = try await connection.request(
                "POST", "/http-bind", body: "<body xmlns='\(Self.httpbind)' rid='1' to='localhost' wait='5'>\(padding)</body>")
            #expect(answer.status == 200 && BOSHTestClient.parse(answer.text)?[attribute: "condition"] == "policy-violation", "\(answer)")
            // The connection still serves the next request.
            let created = try await connection.request("POST", "/http-bind", body: Self.creation(rid: 2000))
            #expect(BOSHTestClient.parse(created.text)?[attribute: "sid"] != nil, "\(created)")
        }
    }
}
