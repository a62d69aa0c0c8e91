import AsyncHTTPClient
import Foundation
import ParleyCore
import ParleyServer
import ParleyTestSupport
import Testing

/// A BOSH session is the same client session as on TCP and WebSocket: it goes when its client
/// goes quiet, it resumes (XEP-0198), it shares an account with sessions on other transports,
/// and XEP-0156 announces where to find it.
@Suite struct BOSHSessionScenarios {
    @Test func inactivityEndsTheSessionAndItsPresence() async throws {
        try await BOSHScenarios.with({ $0.http.bosh.inactivity = .seconds(1) }) { server, port in
            try await Subscribe.establish(server, "bob", to: "alice")
            let bob = try await server.im("bob", "home")
            let probe = try await BOSHTestClient(port: port, rid: 50).create()
            #expect(probe.body?[attribute: "inactivity"] == "1")
            let web = BOSHTestClient(port: port)
            try await web.login("alice", resource: "web")
            try await web.send("<presence/>")
            try await bob.expectPresence(from: "alice@localhost/web")
            try await web.settle()
            // No request for longer than `inactivity`: as a TCP connection gone, the
            // session ends and its contacts see it go. The server counts from when it wrote
            // the last answer; the client's clock starts when it read it, which in a loaded
            // full run was once 127 ms later: the bound says the session was not ended at once,
            // not how exact the timer is.
            let quiet = web.lastAnswered
            try await bob.expectPresence(from: "alice@localhost/web", type: "unavailable")
            #expect(ContinuousClock.now - quiet >= .milliseconds(500))
            try await server.waitUntilOffline("alice")
            let late = try await web.request()
            #expect(late.isTerminate, "\(late.text)")
        }
    }

    @Test func streamManagementAcknowledgesAndResumesOverBOSH() async throws {
        try await BOSHScenarios.with({ $0.http.bosh.inactivity = .seconds(1) }) { server, port in
            let bob = try await server.login("bob", resource: "home")
            let web = BOSHTestClient(port: port)
            try await web.authenticate("alice")
            _ = try await web.query("<iq type='set' id='b'><bind xmlns='\(XMLNamespace.bind)'><resource>web</resource></bind></iq>", id: "b")
            try await web.send("<enable xmlns='urn:xmpp:sm:3' resume='true'/>")
            let enabled = try await web.expect("enabled", namespace: TestClient.sm)
            let id = try #require(enabled[attribute: "id"])
            try await bob.send("<message to='alice@localhost/web' type='chat' id='m1'><body>one</body></message>")
            _ = try await web.expectIgnoringAckRequests("message")
            try await web.send("<r xmlns='urn:xmpp:sm:3'/>")
            let ack = try await web.expectIgnoringAckRequests("a", namespace: TestClient.sm)
            #expect(ack[attribute: "h"] == "0")
            // The tab goes away without a word; the session waits to be resumed, and a
            // message arrives meanwhile.
            try await web.settle()
            try await Task.sleep(for: .milliseconds(1500))
            try await bob.send("<message to='alice@localhost/web' type='chat' id='m2'><body>two</body></message>")

            let again = BOSHTestClient(port: port, rid: 9_000)
            try await again.authenticate("alice")
            try await again.send("<resume xmlns='urn:xmpp:sm:3' previd='\(id)' h='0'/>")
            let resumed = try await again.expect("resumed", namespace: TestClient.sm)
            #expect(resumed[attribute: "h"] == "0")
            let first = try await again.expectIgnoringAckRequests("message")
            let second = try await again.expectIgnoringAckRequests("message")
            #expect([first, second].map { $0.firstChild("body")?.text } == ["one", "two"])
        }
    }

    @Test func oneAccountOnTCPWebSocketAndBOSHGetsMessagesAndCarbonsOnAll() async throws {
        try await BOSHScenarios.with { server, port in
            let desk = try await server.login("alice", resource: "desk")
            let tab = try await WebSocketTestClient.open(port: port)
            try await tab.login("alice", resource: "tab")
            let web = BOSHTestClient(port: port)
            try await web.login("alice", resource: "web")
            let bob = try await server.login("bob", resource: "home")
            let enable = "<iq type='set' id='c'><enable xmlns='urn:xmpp:carbons:2'/></iq>"
            #expect(try await desk.query(enable, id: "c").type == "result")
            #expect(try await tab.xmpp.query(enable, id: "c").type == "result")
            #expect(try await web.query(enable, id: "c")[attribute: "type"] == "result")

            try await bob.send("<message to='alice@localhost/web' type='chat' id='b1'><body>to bosh</body></message>")
            #expect(try await web.expect("message").firstChild("body")?.text == "to bosh")
            for copy in [try await desk.expect("message"), try await tab.xmpp.expect("message")] {
                let forwarded = copy.firstChild("received", namespace: "urn:xmpp:carbons:2")?
                    .firstChild("forwarded", namespace: "urn:xmpp:forward:0")?.firstChild("message")
                #expect(forwarded?.firstChild("body")?.text == "to bosh", "\(copy.xmlString())")
            }

            try await web.send("<message to='bob@localhost/home' type='chat' id='a1'><body>from bosh</body></message>")
            #expect(try await bob.expect("message").firstChild("body")?.text == "from bosh")
            for copy in [try await desk.expect("message"), try await tab.xmpp.expect("message")] {
                let forwarded = copy.firstChild("sent", namespace: "urn:xmpp:carbons:2")?
                    .firstChild("forwarded", namespace: "urn:xmpp:forward:0")?.firstChild("message")
                #expect(forwarded?.firstChild("body")?.text == "from bosh", "\(copy.xmlString())")
            }

            // And the other way: what the TCP resource sends reaches BOSH as a carbon.
            try await desk.send("<message to='bob@localhost/home' type='chat' id='d1'><body>from desk</body></message>")
            _ = try await bob.expect("message")
            let carbon = try await web.expect("message")
            #expect(carbon.firstChild("sent", namespace: "urn:xmpp:carbons:2") != nil, "\(carbon.xmlString())")
            _ = try await tab.xmpp.expect("message")
        }
    }

    @Test func hostMetaListsTheBOSHEndpointNextToTheWebSocketOne() async throws {
        try await BOSHScenarios.with { _, port in
            let xrd = try await HTTPClient.shared.execute(
                HTTPClientRequest(url: "http://127.0.0.1:\(port)/.well-known/host-meta"), timeout: .seconds(10))
            let document = String(buffer: try await xrd.body.collect(upTo: 1 << 16))
            #expect(document == """
                <?xml version='1.0' encoding='utf-8'?>
                <XRD xmlns='http://docs.oasis-open.org/ns/xri/xrd-1.0'>
                  <Link rel='urn:xmpp:alt-connections:websocket' href='ws://localhost:\(port)/xmpp-websocket'/>
                  <Link rel='urn:xmpp:alt-connections:xbosh' href='http://localhost:\(port)/http-bind'/>
                </XRD>

                """)
            try SchemaValidator.shared.validate(document)
            let jrd = try await HTTPClient.shared.execute(
                HTTPClientRequest(url: "http://127.0.0.1:\(port)/.well-known/host-meta.json"), timeout: .seconds(10))
            let json = try JSONSerialization.jsonObject(with: Data(try await jrd.body.collect(upTo: 1 << 16).readableBytesView)) as? [String: Any]
            #expect(json?["links"] as? [[String: String]] == [
                ["rel": "urn:xmpp:alt-connections:websocket", "href": "ws://localhost:\(port)/xmpp-websocket"],
                ["rel": "urn:xmpp:alt-connections:xbosh", "href": "http://localhost:\(port)/http-bind"],
            ])
        }
        // BOSH alone is announced alone; off, its path is not served.
        try await BOSHScenarios.with({ $0.http.webSocket.enabled = false }) { _, port in
            let xrd = try await HTTPClient.shared.execute(
                HTTPClientRequest(url: "http://127.0.0.1:\(port)/.well-known/host-meta"), timeout: .seconds(10))
            let document = String(buffer: try await xrd.body.collect(upTo: 1 << 16))
            #expect(document.contains("xbosh") && !document.contains("websocket"), "\(document)")
        }
        try await BOSHScenarios.with({ $0.http.bosh.enabled = false }) { _, port in
            let answer = try await BOSHTestClient(port: port).create()
            #expect(answer.status == 404, "\(answer.text)")
        }
    }
}
