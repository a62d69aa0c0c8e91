import Foundation
import ParleyTestSupport
import Testing

/// `parley --websocket`: the one-shot commands over XMPP-over-WebSocket, and what a script
/// sees when the endpoint is wrong.
@Suite(.serialized, .enabled(if: CLI.executable != nil, "the parley executable is built next to the tests"))
struct CLIWebSocketTests {
    @Test func sendOverAWebSocketAndReadItOnTCP() async throws {
        try await WebSocketTestServer.with { web in
            try await web.server.createAccount("alice")
            try await web.server.createAccount("bob")
            let cli = try CLI(server: web.server)
            for user in ["alice", "bob"] { try cli.writeConfig(user, password: TestServer.password) }
            let url = web.webSocketURL.description

            var result = try await cli.run(["send", "bob@localhost", "over a websocket", "--config", cli.config("alice"), "--websocket", url])
            #expect(result.status == 0, "\(result.stderr)")
            result = try await cli.run(["history", "alice@localhost", "--config", cli.config("bob")])
            #expect(result.status == 0 && result.stdout.contains("alice@localhost: over a websocket"), "\(result.stdout) \(result.stderr)")

            result = try await cli.run(["roster", "--config", cli.config("alice"), "--websocket", "ftp://localhost/x"])
            #expect(result.status == 1)
            #expect(result.stderr == "parley: 'ftp://localhost/x' is not a WebSocket URL (wss://host[:port]/path) or 'auto'\n", "\(result.stderr)")

            result = try await cli.run(["roster", "--config", cli.config("alice"), "--websocket", "wss://localhost:\(web.httpPort)/nope"])
            #expect(result.status == 3)
            #expect(result.stderr.contains("refused the WebSocket upgrade: HTTP 404 Not Found: No WebSocket endpoint here."), "\(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        }
    }
}
