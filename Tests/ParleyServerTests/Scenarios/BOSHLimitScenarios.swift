import Foundation
import NIOHTTP1
import ParleyCore
import ParleyServer
import ParleyTestSupport
import Testing

/// Every limit and every malformed request of the BOSH endpoint gets its XEP-0124 §17 answer,
/// and none of them disturbs a session that behaves.
@Suite struct BOSHLimitScenarios {
    static let open = "<body xmlns='http://jabber.org/protocol/httpbind'"

    @Test func malformedRequestsAreBadRequestAndOthersCarryOn() async throws {
        try await BOSHScenarios.with({ $0.http.bosh.maxBodyBytes = 4096 }) { server, port in
            let bob = try await server.login("bob", resource: "home")
            let web = BOSHTestClient(port: port)
            try await web.login("alice", resource: "web")
            try await web.settle()
            let cases: [(String, String)] = [
                ("\(Self.open) rid='1' to='localhost' wait='5'><iq>", "bad-request"),
                ("<body rid='1' to='localhost' wait='5'/>", "bad-request"),
                ("<stream:stream xmlns:stream='http://etherx.jabber.org/streams'/>", "bad-request"),
                ("\(Self.open) to='localhost' wait='5'/>", "bad-request"),
                ("\(Self.open) rid='9007199254740992' to='localhost' wait='5'/>", "bad-request"),
                ("\(Self.open) rid='1' to='localhost' wait='5'/><body/>", "bad-request"),
                ("<!DOCTYPE body [<!ENTITY a 'aaaa'>]>\(Self.open) rid='1' to='localhost' wait='5'>&a;</body>", "bad-request"),
                ("", "bad-request"),
                ("\(Self.open) rid='1' to='localhost' wait='5'>\(String(repeating: "x", count: 5000))</body>", "policy-violation"),
            ]
            for (text, condition) in cases {
                let answer = try await BOSHTestClient.post(port: port, text)
                #expect(answer.status == 200 && answer.isTerminate && answer.condition == condition, "\(text.prefix(80)) → \(answer.text)")
                try SchemaValidator.shared.validate(answer.text)
            }
            // The session that behaved was not touched.
            try await bob.send("<message to='alice@localhost/web' type='chat' id='b1'><body>still here</body></message>")
            #expect(try await web.expect("message").firstChild("body")?.text == "still here")
        }
    }

    @Test func creationNeedsAHostThisServerServesAndAWait() async throws {
        try await BOSHScenarios.with { _, port in
            let cases: [(String, String)] = [
                ("\(Self.open) rid='1' wait='5' ver='1.6'/>", "improper-addressing"),
                ("\(Self.open) rid='1' to='example.net' wait='5' ver='1.6'/>", "host-unknown"),
                ("\(Self.open) rid='1' to='localhost' ver='1.6'/>", "bad-request"),
                ("\(Self.open) rid='1' to='localhost' wait='5' hold='x' ver='1.6'/>", "bad-request"),
            ]
            for (text, condition) in cases {
                let answer = try await BOSHTestClient.post(port: port, text)
                #expect(answer.status == 200 && answer.condition == condition, "\(text) → \(answer.text)")
            }
            // §17.1: a client that gave no `ver` gets the HTTP error codes it understands.
            let legacy = try await BOSHTestClient.post(port: port, "\(Self.open) rid='1' to='localhost'/>")
            #expect(legacy.status == 400, "\(legacy.text)")
            let client = BOSHTestClient(port: port)
            let created = try await client.request(attributes: "to='localhost' wait='5' hold='1'")
            let sid = try #require(created.body?[attribute: "sid"], "\(created.text)")
            #expect(created.body?[attribute: "ver"] == nil)
            let beyond = try await BOSHTestClient.post(port: port, "\(Self.open) rid='\(client.nextRID + 7)' sid='\(sid)'/>")
            #expect(beyond.status == 404 && beyond.condition == "item-not-found", "\(beyond.text)")
        }
    }

    @Test func theSessionLimitRefusesNewSessionsWithRemoteConnectionFailed() async throws {
        try await BOSHScenarios.with({ $0.http.bosh.maxSessions = 1 }) { _, port in
            let first = BOSHTestClient(port: port)
            _ = try await first.create()
            let second = try await BOSHTestClient(port: port, rid: 77).create()
            #expect(second.isTerminate && second.condition == "remote-connection-failed", "\(second.text)")
            try SchemaValidator.shared.validate(second.text)
            let ended = try await first.request(attributes: "type='terminate'")
            #expect(ended.isTerminate)
            let third = try await BOSHTestClient(port: port, rid: 99).create()
            #expect(third.body?[attribute: "sid"] != nil, "\(third.text)")
        }
    }

    @Test func boshAndTCPConnectionsShareThePerAddressLimit() async throws {
        try await BOSHScenarios.with({ $0.limits.connectionsPerIP = 1 }) { server, port in
            let tcp = try await server.connect()
            try await tcp.openStream()
            let refused = try await BOSHTestClient(port: port).create()
            #expect(refused.isTerminate && refused.condition == "remote-stream-error", "\(refused.text)")
            let error = try #require(refused.payload.last)
            #expect(error.firstChild("policy-violation") != nil, "\(refused.text)")
            #expect(error.firstChild("text")?.text.contains("Too many connections from your address") == true, "\(refused.text)")
            await tcp.close()
        }
    }

    @Test func aRestartBeforeAuthenticationIsABadRequest() async throws {
        try await BOSHScenarios.with { _, port in
            let client = BOSHTestClient(port: port)
            try await client.create()
            let answer = try await client.request(attributes: "to='localhost' xmpp:restart='true' xmlns:xmpp='urn:xmpp:xbosh'")
            #expect(answer.isTerminate && answer.condition == "bad-request", "\(answer.text)")
        }
    }

    @Test func aClientThatStopsReadingIsCutOffNotTheServer() async throws {
        try await BOSHScenarios.with({ $0.limits.maxStanzaBytes = 300_000 }) { server, port in
            let bob = try await server.login("bob", resource: "home")
            let web = BOSHTestClient(port: port)
            try await web.login("alice", resource: "web")
            try await web.settle()
            // Nobody polls for alice while 17 MB pile up for her.
            let text = String(repeating: "y", count: 200_000)
            for index in 0..<90 {
                try await bob.send("<message to='alice@localhost/web' type='chat' id='m\(index)'><body>\(text)</body></message>")
            }
            // Every one of them has reached her session's output by the time bob's ping is answered.
            try await bob.expectNothingPending()
            try await Task.sleep(for: .milliseconds(200))
            let answer = try await web.request()
            #expect(answer.isTerminate && answer.condition == "remote-stream-error", "\(answer.text.prefix(300))")
            #expect(answer.text.suffix(1000).contains("<resource-constraint"), "\(answer.text.suffix(400))")
            try await server.waitUntilOffline("alice")
        }
    }

    @Test func preflightAndGETAreAnsweredForBrowsers() async throws {
        try await BOSHScenarios.with { _, port in
            let preflight = try await BOSHTestClient.post(
                port: port, "", method: .OPTIONS,
                headers: [("Origin", "https://chat.example.org"), ("Access-Control-Request-Method", "POST"), ("Access-Control-Request-Headers", "content-type")])
            #expect(preflight.status == 200)
            #expect(preflight.headers.first(name: "Access-Control-Allow-Origin") == "*")
            #expect(preflight.headers.first(name: "Access-Control-Allow-Methods") == "GET, POST, OPTIONS")
            #expect(preflight.headers.first(name: "Access-Control-Allow-Headers") == "Content-Type")
            let page = try await BOSHTestClient.post(port: port, "", method: .GET)
            #expect(page.status == 200 && page.text.contains("BOSH"))
        }
    }
}
