import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import ParleyCore
import ParleyServer
import ParleyTestSupport
import Testing

@testable import ParleyClient

/// ParleyClient over XMPP-over-WebSocket (RFC 7395) against parleyd's endpoint: the same
/// login, chat, stream management and reconnection as on TCP, with TCP clients alongside,
/// XEP-0156 discovery, and one-line errors for what can go wrong at the upgrade.
@Suite struct WebSocketClientTests {
    @Test func theWholeStoryOverAWebSocketWithAPeerOnTCP() async throws {
        try await WebSocketTestServer.with { web in
            try await web.server.createAccount("alice")
            try await web.server.createAccount("bob")
            try await loginRosterFriendRequestChatScenario(cacheDirectory: web.server.directory + "/clients") { username in
                // Alice in a browser-like client, Bob on TCP with STARTTLS.
                username == "alice" ? try web.webSocketConfiguration(for: username) : try web.server.configuration(for: username)
            }
        }
    }

    @Test func aDroppedWebSocketIsResumedAndWhatCameMeanwhileArrives() async throws {
        try await WebSocketTestServer.with { web in
            try await web.server.createAccount("alice")
            try await web.server.createAccount("bob")
            let (alice, aliceEvents) = try web.webSocketClient("alice", resource: "browser")
            let (bob, bobEvents) = try web.server.client("bob")
            try await alice.connect()
            try await bob.connect()
            let connected = try await aliceEvents.next("Alice signed in") { if case .connected = $0 { true } else { false } }
            guard case .connected(let aliceJID) = connected else { return }
            #expect(await alice.xmpp.managed?.resumptionID != nil, "parleyd offers resumption over a WebSocket")

            await alice.xmpp.dropConnection()
            try await aliceEvents.next("the drop") { if case .disconnected(.connectionLost) = $0 { true } else { false } }
            let meanwhile = await bob.sendMessage(to: aliceJID, body: "while you were away")
            let resumed = try await aliceEvents.next("the resumption") {
                switch $0 {
                case .resumed, .connected: true
                default: false
                }
            }
            #expect(resumed == .resumed(jid: aliceJID))
            try await aliceEvents.next("Bob's message") { if case .message(let m) = $0 { m.id == meanwhile && m.body == "while you were away" } else { false } }
            let reply = await alice.sendMessage(to: try JID("bob@localhost"), body: "back")
            try await bobEvents.next("Alice's reply") { if case .message(let m) = $0 { m.id == reply } else { false } }
            await alice.disconnect()
            await bob.disconnect()
        }
    }

    @Test func withoutResumptionItReconnectsWithANewSession() async throws {
        try await WebSocketTestServer.with(resumeTimeout: .zero) { web in
            try await web.server.createAccount("alice")
            let (alice, aliceEvents) = try web.webSocketClient("alice")
            try await alice.connect()
            try await aliceEvents.next("signed in") { if case .connected = $0 { true } else { false } }
            await alice.xmpp.dropConnection()
            try await aliceEvents.next("reconnecting") { if case .reconnecting = $0 { true } else { false } }
            try await aliceEvents.next("signed in again", where: { if case .connected = $0 { true } else { false } })
            try await alice.xmpp.ping()
            await alice.disconnect()
        }
    }

    @Test func theEndpointIsFoundThroughHostMeta() async throws {
        try await WebSocketTestServer.with { web in
            try await web.server.createAccount("alice")
            let (alice, aliceEvents) = try web.webSocketClient("alice") { configuration in
                configuration.webSocket = .discover
                configuration.hostMetaBase = "https://localhost:\(web.httpPort)"
                configuration.httpTrustedCertificateFile = web.server.running.certificatePath
            }
            try await alice.connect()
            try await aliceEvents.next("signed in") { if case .connected = $0 { true } else { false } }
            let via = await alice.xmpp.connectedVia?.webSocketEndpoint
            #expect(via == web.webSocketURL, "\(String(describing: via))")
            await alice.disconnect()

            // A domain whose host-meta cannot be had: one line saying so.
            var lost = try web.server.configuration(for: "alice")
            lost.webSocket = .discover
            lost.hostMetaBase = "https://127.0.0.1:1"
            lost.reconnect.enabled = false
            let message = try await connectionFailure(lost)
            #expect(message.hasPrefix("no XMPP WebSocket endpoint found for localhost (https://127.0.0.1:1/.well-known/host-meta.json: "), "\(message)")
            #expect(!message.contains("\n"))
        }
    }

    @Test func aRefusedUpgradeAMissingSubprotocolAndBadTLSAreOneLineErrors() async throws {
        try await WebSocketTestServer.with { web in
            try await web.server.createAccount("alice")
            var wrongPath = try web.webSocketConfiguration(for: "alice")
            wrongPath.webSocket = .endpoint(WebSocketURL("wss://localhost:\(web.httpPort)/nope")!)
            wrongPath.reconnect.enabled = false
            #expect(try await connectionFailure(wrongPath) == """
                cannot connect to localhost:\(web.httpPort): wss://localhost:\(web.httpPort)/nope refused the WebSocket upgrade: \
                HTTP 404 Not Found: No WebSocket endpoint here.
                """)

            var wrongCertificate = try web.webSocketConfiguration(for: "alice")
            wrongCertificate.trust = .pinned(.sha256Fingerprint(String(repeating: "AB", count: 32)))
            wrongCertificate.reconnect.enabled = false
            let client = try XMPPClient(configuration: wrongCertificate, logger: quietLogger("client"))
            do {
                try await client.connect()
                Issue.record("connected with a certificate that is not the pinned one")
            } catch ClientError.certificateUntrusted(let reason) {
                #expect(reason.hasPrefix("the certificate is not the trusted one (SHA-256 fingerprint "), "\(reason)")
            }

            var unencrypted = try web.webSocketConfiguration(for: "alice")
            unencrypted.webSocket = .endpoint(WebSocketURL("ws://xmpp.example.org/xmpp-websocket")!)
            unencrypted.reconnect.enabled = false
            #expect(try await connectionFailure(unencrypted) == """
                cannot connect to xmpp.example.org:80: refusing ws://xmpp.example.org/xmpp-websocket: \
                an unencrypted WebSocket is only used on this machine; use wss://
                """)
        }

        // A WebSocket server that is not an XMPP one: it upgrades without the subprotocol.
        let plain = try await PlainWebSocketServer.start()
        var configuration = ClientConfiguration(jid: try JID("alice@localhost"), password: "secret")
        configuration.webSocket = .endpoint(WebSocketURL("ws://127.0.0.1:\(plain.port)/chat")!)
        configuration.reconnect.enabled = false
        #expect(try await connectionFailure(configuration) == """
            cannot connect to 127.0.0.1:\(plain.port): ws://127.0.0.1:\(plain.port)/chat accepted the WebSocket without the 'xmpp' \
            subprotocol (RFC 7395 §3.1): it is not an XMPP endpoint
            """)
        try await plain.channel.close()
    }

    /// What `connect()` throws for a configuration that cannot connect, as the CLI prints it.
    private func connectionFailure(_ configuration: ClientConfiguration) async throws -> String {
        let client = try XMPPClient(configuration: configuration, logger: quietLogger("client"))
        do {
            try await client.connect()
            await client.disconnect()
            return "connected"
        } catch let error as ClientError {
            return error.description
        }
    }
}

extension XMPPClient {
    /// The connection goes away without `<close/>`, as when a network drops: the server keeps
    /// the session for resumption.
    func dropConnection() {
        connection?.channel.close(promise: nil)
    }
}

/// An HTTP server whose every path upgrades to a WebSocket, with no subprotocol: a chat
/// endpoint of some web application, not an XMPP one.
struct PlainWebSocketServer {
    let channel: any Channel
    var port: Int { channel.localAddress?.port ?? 0 }

    static func start() async throws -> PlainWebSocketServer {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                let upgrader = NIOWebSocketServerUpgrader(
                    shouldUpgrade: { channel, _ in channel.eventLoop.makeSucceededFuture(HTTPHeaders()) },
                    upgradePipelineHandler: { channel, _ in channel.eventLoop.makeSucceededVoidFuture() })
                return channel.pipeline.configureHTTPServerPipeline(
                    withServerUpgrade: (upgraders: [upgrader], completionHandler: { _ in }))
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return PlainWebSocketServer(channel: channel)
    }
}
