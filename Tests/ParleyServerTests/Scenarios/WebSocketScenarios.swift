import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOWebSocket
import ParleyCore
import ParleyHTTP
import ParleyServer
import ParleyTestSupport
import ServiceLifecycle
import Testing

/// XMPP over WebSocket (RFC 7395) on the HTTP service, over real sockets: the upgrade, the
/// framing and its errors, and the same session as on TCP (SASL, bind, routing, carbons,
/// stream management) with TCP sessions alongside.
@Suite struct WebSocketScenarios {
    /// A server with ParleyHTTP (plain HTTP on loopback) serving its WebSocket endpoint.
    static func with<T>(
        _ configure: @escaping (inout ServerConfiguration) -> Void = { _ in }, _ body: (TestServer, Int) async throws -> T
    ) async throws -> T {
        try await TestServer.with({ configuration in
            configuration.http.enabled = true
            configuration.http.port = 0
            configuration.http.tls = false
            configuration.http.upload.enabled = false
            configure(&configuration)
        }) { server in
            var logger = Logger(label: "parley.scenario.websocket")
            logger.logLevel = .critical
            let http = try ParleyHTTPServer(
                configuration: server.configuration, storage: server.running.storage, certificatePath: "", keyPath: "",
                xmpp: server.running, logger: logger)
            let group = ServiceGroup(services: [http], logger: logger)
            let running = Task { try await group.run() }
            let port = try #require(await http.addresses().first?.port)
            do {
                let result = try await body(server, port)
                await group.triggerGracefulShutdown()
                try await running.value
                return result
            } catch {
                await group.triggerGracefulShutdown()
                try? await running.value
                throw error
            }
        }
    }

    // MARK: The upgrade

    @Test func theUpgradeNeedsTheXMPPSubprotocolAndTheEndpointsPath() async throws {
        try await Self.with { _, port in
            for protocols in [nil, ["chat"]] as [[String]?] {
                guard case .refused(let answer) = try await WebSocketTestClient.connect(port: port, protocols: protocols) else {
                    throw ScenarioFailure("an upgrade without the xmpp subprotocol was accepted")
                }
                #expect(answer.status == 400)
                #expect(answer.body.contains("'xmpp' subprotocol"), "\(answer.body)")
            }
            guard case .refused(let elsewhere) = try await WebSocketTestClient.connect(port: port, path: "/websocket") else {
                throw ScenarioFailure("an upgrade on another path was accepted")
            }
            #expect(elsewhere.status == 404)
            guard case .upgraded(let client) = try await WebSocketTestClient.connect(port: port, protocols: ["chat", "xmpp"]) else {
                throw ScenarioFailure("an upgrade offering xmpp among others was refused")
            }
            #expect(client.responseHeaders.contains { $0.0.lowercased() == "sec-websocket-protocol" && $0.1 == "xmpp" })
            await client.xmpp.close()
        }
    }

    @Test func anAllowListOfOriginsRefusesOtherPages() async throws {
        try await Self.with({ $0.http.webSocket.allowedOrigins = ["https://chat.example.org"] }) { _, port in
            guard case .refused(let answer) = try await WebSocketTestClient.connect(port: port, origin: "https://evil.example") else {
                throw ScenarioFailure("a page from an origin not allowed connected")
            }
            #expect(answer.status == 403)
            #expect(answer.body.contains("https://evil.example"))
            guard case .upgraded(let client) = try await WebSocketTestClient.connect(port: port, origin: "https://chat.example.org") else {
                throw ScenarioFailure("a page from an allowed origin was refused")
            }
            try await client.openStream()
            await client.xmpp.close()
        }
    }

    // MARK: Framing

    @Test func openIsAnsweredWithOpenAndFeaturesAndCloseWithClose() async throws {
        try await Self.with { _, port in
            let client = try await WebSocketTestClient.open(port: port)
            let features = try await client.openStream()
            // Loopback counts as confidential (as PLAIN's rule on c2s); there is no STARTTLS on a WebSocket.
            #expect(features.firstChild("starttls", namespace: XMLNamespace.tls) == nil, "\(features.xmlString())")
            let mechanisms = features.firstChild("mechanisms", namespace: XMLNamespace.sasl)?.children("mechanism").compactMap(\.text) ?? []
            #expect(mechanisms.contains("SCRAM-SHA-256") && mechanisms.contains("PLAIN"), "\(features.xmlString())")
            let texts = client.frames.texts
            #expect(texts.count == 2)
            let open = try #require(texts.first)
            #expect(open.hasPrefix("<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' from='localhost' id='"), "\(open)")
            #expect(open.hasSuffix("' version='1.0' xml:lang='en'/>"), "\(open)")
            #expect(texts.last?.hasPrefix("<stream:features xmlns:stream='http://etherx.jabber.org/streams'>") == true, "\(texts)")

            try await client.xmpp.send("<close xmlns='urn:ietf:params:xml:ns:xmpp-framing'/>")
            try await client.xmpp.expectStreamEnd()
            #expect(client.frames.texts.last == "<close xmlns='urn:ietf:params:xml:ns:xmpp-framing'/>")
            #expect(client.frames.closeCodes == [.normalClosure])
        }
    }

    @Test func anOpenForAnotherHostOrVersionIsAStreamError() async throws {
        try await Self.with { _, port in
            let stranger = try await WebSocketTestClient.open(port: port)
            try await stranger.xmpp.send(WebSocketTestClient.openElement(to: "example.net"))
            let unknown = try await stranger.expectStreamError(.hostUnknown)
            #expect(unknown.text?.contains("example.net") == true)

            let future = try await WebSocketTestClient.open(port: port)
            try await future.xmpp.send(WebSocketTestClient.openElement(version: "2.0"))
            try await future.expectStreamError(.unsupportedVersion)
        }
    }

    @Test func aMessageMustBeOneCompleteElement() async throws {
        try await Self.with { _, port in
            let cases: [(String, StreamErrorCondition, String)] = [
                ("<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' to='localhost' version='1.0'/><presence/>", .notWellFormed, "holds 2 elements"),
                ("<iq type='get' id='1'><ping xmlns='urn:xmpp:ping'/>", .notWellFormed, "ends inside an element"),
                ("<presence/><presence", .notWellFormed, "ends inside an element"),
                ("<?xml version='1.0'?><stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams' to='localhost' version='1.0'>", .invalidNamespace, "<open"),
                ("<presence/>", .badFormat, "must begin with <open"),
            ]
            for (message, condition, text) in cases {
                let client = try await WebSocketTestClient.open(port: port)
                try await client.xmpp.send(message)
                let error = try await client.expectStreamError(condition)
                #expect(error.text?.contains(text) == true, "\(message) → \(error)")
            }
            // After a good <open/>, a bad message mid-stream ends the stream the same way.
            let client = try await WebSocketTestClient.open(port: port)
            try await client.openStream()
            try await client.xmpp.send("<presence/><presence/>")
            try await client.expectStreamError(.notWellFormed)
        }
    }

    @Test func anOversizedMessageIsAPolicyViolation() async throws {
        try await Self.with({ $0.http.webSocket.maxMessageBytes = 4096 }) { _, port in
            let whole = try await WebSocketTestClient.open(port: port)
            try await whole.openStream()
            try await whole.xmpp.send("<message to='bob@localhost'><body>\(String(repeating: "x", count: 5000))</body></message>")
            let error = try await whole.expectStreamError(.policyViolation, closeCode: .messageTooLarge)
            #expect(error.text?.contains("4096") == true, "\(error)")

            // Frames each within the limit, whose message is not.
            let fragmented = try await WebSocketTestClient.open(port: port)
            try await fragmented.openStream()
            let part = ByteBuffer(string: String(repeating: "y", count: 3000))
            try await fragmented.send(frame: WebSocketFrame(fin: false, opcode: .text, data: ByteBuffer(string: "<message><body>")))
            try await fragmented.send(frame: WebSocketFrame(fin: false, opcode: .continuation, data: part))
            try await fragmented.send(frame: WebSocketFrame(fin: true, opcode: .continuation, data: part))
            try await fragmented.expectStreamError(.policyViolation, closeCode: .messageTooLarge)
        }
    }

    @Test func aMessageInSeveralFramesIsOneElementAndPingsArePonged() async throws {
        try await Self.with { _, port in
            let client = try await WebSocketTestClient.open(port: port)
            try await client.send(frame: WebSocketFrame(fin: false, opcode: .text, data: ByteBuffer(string: "<open xmlns='urn:ietf:params:xml:ns:")))
            try await client.send(frame: WebSocketFrame(fin: true, opcode: .continuation, data: ByteBuffer(string: "xmpp-framing' to='localhost' version='1.0'/>")))
            try await client.xmpp.expectHeader()
            try await client.xmpp.expect("features", namespace: XMLNamespace.streams)
            try await client.send(frame: WebSocketFrame(fin: true, opcode: .ping, data: ByteBuffer(string: "are you there")))
            let deadline = ContinuousClock.now + .seconds(5)
            while client.frames.pongs.isEmpty, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
            #expect(client.frames.pongs == ["are you there"])
            try await client.send(frame: WebSocketFrame(fin: true, opcode: .binary, data: ByteBuffer(string: "<presence/>")))
            try await client.expectStreamError(.badFormat, closeCode: .unacceptableData)
        }
    }

    // MARK: The same session as on TCP

    @Test func aWebSocketSessionTalksWithTCPSessionsAndGetsCarbons() async throws {
        try await Self.with { server, port in
            let web = try await WebSocketTestClient.open(port: port)
            let jid = try await web.login("alice", resource: "web")
            #expect(jid == "alice@localhost/web")
            let desk = try await server.login("alice", resource: "desk")
            let bob = try await server.login("bob", resource: "home")
            for client in [web.xmpp, desk] {
                let reply = try await client.query("<iq type='set' id='c'><enable xmlns='urn:xmpp:carbons:2'/></iq>", id: "c")
                #expect(reply.type == "result")
            }

            try await bob.send("<message to='alice@localhost/web' type='chat' id='b1'><body>hello browser</body></message>")
            let received = try await web.xmpp.expect("message")
            #expect(received.from == "bob@localhost/home" && received.firstChild("body")?.text == "hello browser")
            let receivedCarbon = try await desk.expect("message")
            #expect(receivedCarbon.firstChild("received", namespace: "urn:xmpp:carbons:2") != nil, "\(receivedCarbon.xmlString())")

            try await web.xmpp.send("<message xmlns='jabber:client' to='bob@localhost/home' type='chat' id='a1'><body>hello desk</body></message>")
            let sent = try await bob.expect("message")
            #expect(sent.from == "alice@localhost/web" && sent.firstChild("body")?.text == "hello desk")
            let sentCarbon = try await desk.expect("message")
            let copy = sentCarbon.firstChild("sent", namespace: "urn:xmpp:carbons:2")?
                .firstChild("forwarded", namespace: "urn:xmpp:forward:0")?.firstChild("message")
            #expect(copy?.firstChild("body")?.text == "hello desk", "\(sentCarbon.xmlString())")

            // Every message the browser got was one element with its own namespace declarations.
            let stanza = try #require(web.frames.texts.first { $0.contains("hello browser") })
            #expect(stanza.hasPrefix("<message xmlns='jabber:client'"), "\(stanza)")
        }
    }

    @Test func streamManagementAcknowledgesAndResumesOverWebSocket() async throws {
        try await Self.with { server, port in
            let bob = try await server.login("bob", resource: "home")
            let web = try await WebSocketTestClient.open(port: port)
            try await web.authenticate("alice")
            try await web.xmpp.bind(resource: "web")
            let enabled = try await web.xmpp.enableStreamManagement(resume: true)
            let id = try #require(enabled[attribute: "id"])
            try await bob.send("<message to='alice@localhost/web' type='chat' id='m1'><body>one</body></message>")
            try await web.xmpp.expectIgnoringAckRequests("message")
            try await web.xmpp.send("<message to='bob@localhost/home' type='chat' id='a1'><body>ack me</body></message>")
            try await bob.expect("message")
            #expect(try await web.xmpp.requestAcknowledgement() == 1)
            // The browser tab loses its connection without a word; a message arrives meanwhile.
            await web.xmpp.close()
            try await Task.sleep(for: .milliseconds(200))
            try await bob.send("<message to='alice@localhost/web' type='chat' id='m2'><body>two</body></message>")

            let again = try await WebSocketTestClient.open(port: port)
            try await again.authenticate("alice")
            try await again.xmpp.send("<resume xmlns='urn:xmpp:sm:3' previd='\(id)' h='0'/>")
            let resumed = try await again.xmpp.expect("resumed", namespace: TestClient.sm)
            #expect(resumed[attribute: "h"] == "1")
            let first = try await again.xmpp.expectIgnoringAckRequests("message")
            let second = try await again.xmpp.expectIgnoringAckRequests("message")
            #expect([first, second].map { $0.firstChild("body")?.text } == ["one", "two"])
        }
    }

    @Test func shutdownEndsWebSocketSessionsWithSystemShutdown() async throws {
        try await Self.with { server, port in
            let web = try await WebSocketTestClient.open(port: port)
            try await web.login("alice")
            await server.running.shutdown()
            try await web.expectStreamError(.systemShutdown)
        }
    }

    // MARK: XEP-0156

    @Test func hostMetaListsTheWebSocketEndpointWithCORS() async throws {
        // WebSocket alone (BOSH's link is BOSHSessionScenarios' concern).
        try await Self.with({ $0.http.bosh.enabled = false }) { _, port in
            let url = "ws://localhost:\(port)/xmpp-websocket"
            let xrd = try await HTTPClient.shared.execute(
                HTTPClientRequest(url: "http://127.0.0.1:\(port)/.well-known/host-meta"), timeout: .seconds(10))
            #expect(xrd.status == .ok)
            #expect(xrd.headers.first(name: "Content-Type") == "application/xrd+xml; charset=utf-8")
            #expect(xrd.headers.first(name: "Access-Control-Allow-Origin") == "*")
            let document = String(buffer: try await xrd.body.collect(upTo: 1 << 16))
            #expect(document == """
                <?xml version='1.0' encoding='utf-8'?>
                <XRD xmlns='http://docs.oasis-open.org/ns/xri/xrd-1.0'>
                  <Link rel='urn:xmpp:alt-connections:websocket' href='\(url)'/>
                </XRD>

                """)
            try SchemaValidator.shared.validate(document)

            let jrd = try await HTTPClient.shared.execute(
                HTTPClientRequest(url: "http://127.0.0.1:\(port)/.well-known/host-meta.json"), timeout: .seconds(10))
            #expect(jrd.headers.first(name: "Content-Type") == "application/json")
            #expect(jrd.headers.first(name: "Access-Control-Allow-Origin") == "*")
            let json = try JSONSerialization.jsonObject(with: Data(try await jrd.body.collect(upTo: 1 << 16).readableBytesView)) as? [String: Any]
            let links = json?["links"] as? [[String: String]]
            #expect(links == [["rel": "urn:xmpp:alt-connections:websocket", "href": url]])

            var preflight = HTTPClientRequest(url: "http://127.0.0.1:\(port)/.well-known/host-meta.json")
            preflight.method = .OPTIONS
            preflight.headers.add(name: "Origin", value: "https://chat.example.org")
            preflight.headers.add(name: "Access-Control-Request-Method", value: "GET")
            let answer = try await HTTPClient.shared.execute(preflight, timeout: .seconds(10))
            #expect(answer.status == .noContent)
            #expect(answer.headers.first(name: "Access-Control-Allow-Methods") == "GET, OPTIONS")
        }
    }
}

extension WebSocketScenarios {
    @Test func webSocketAndTCPConnectionsShareThePerAddressLimit() async throws {
        try await Self.with({ $0.limits.connectionsPerIP = 1 }) { server, port in
            let tcp = try await server.connect()
            try await tcp.openStream()
            let web = try await WebSocketTestClient.open(port: port)
            try await web.xmpp.send(WebSocketTestClient.openElement())
            let error = try await web.expectStreamError(.policyViolation)
            #expect(error.text?.contains("Too many connections from your address") == true, "\(error)")
            await tcp.close()
        }
    }
}

extension WebSocketScenarios {
    /// A silent client gets WebSocket pings (browsers answer them by themselves), and its pongs
    /// are life enough for the idle timeout.
    @Test func silenceGetsAWebSocketPingAndPongsKeepTheSessionAlive() async throws {
        try await Self.with({
            $0.keepalive.pingAfter = .seconds(1)
            $0.keepalive.idleTimeout = .seconds(2)
        }) { _, port in
            let web = try await WebSocketTestClient.open(port: port)
            try await web.login("alice")
            try await Task.sleep(for: .milliseconds(3500))
            #expect(web.frames.pings >= 2)
            let pong = try await web.xmpp.query("<iq type='get' id='p' to='localhost'><ping xmlns='urn:xmpp:ping'/></iq>", id: "p")
            #expect(pong.type == "result")
        }
    }
}
