import Foundation
import ParleyClient
import ParleyCore
import ParleyHTTP
import ParleyServer
import ServiceLifecycle

/// A real parleyd with its WebSocket endpoint (RFC 7395) and XEP-0156 host-meta on HTTPS, as
/// `parleyd run` wires them, next to its TCP port; the same self-signed localhost certificate
/// on both, which the clients pin (and trust for the host-meta lookup).
final class WebSocketTestServer: Sendable {
    let server: TestServer
    let http: ParleyHTTPServer
    let httpPort: Int
    private let group: ServiceGroup
    private let running: Task<Void, any Error>

    private init(server: TestServer, http: ParleyHTTPServer, httpPort: Int, group: ServiceGroup, running: Task<Void, any Error>) {
        self.server = server
        self.http = http
        self.httpPort = httpPort
        self.group = group
        self.running = running
    }

    /// `certificateDirectory`: share one certificate between servers (a cluster's nodes).
    static func start(
        certificateDirectory: String? = nil, resumeTimeout: Duration = .seconds(300), configure: (inout ServerConfiguration) -> Void = { _ in }
    ) async throws -> WebSocketTestServer {
        let directory = NSTemporaryDirectory() + "parley-client-websocket-" + UUID().uuidString
        let certificates = try await rootCapableCertificate(in: certificateDirectory ?? directory + "/test-tls")
        let server = try await TestServer.start(resumeTimeout: resumeTimeout, directory: directory) { configuration in
            configuration.http.enabled = true
            configuration.http.port = 0
            configuration.http.tls = true
            configuration.http.upload.enabled = false
            (configuration.tls.certificate, configuration.tls.key) = certificates
            configure(&configuration)
        }
        let running = server.running
        let logger = quietLogger("parleyd.http")
        do {
            let http = try ParleyHTTPServer(
                configuration: running.configuration, storage: running.storage, certificatePath: running.certificatePath,
                keyPath: running.configuration.tlsKeyPath, xmpp: running, logger: logger)
            let group = ServiceGroup(services: [http], logger: logger)
            let task = Task { try await group.run() }
            guard let port = await http.addresses().first?.port else { throw TimedOut(description: "the HTTP service did not bind") }
            return WebSocketTestServer(server: server, http: http, httpPort: port, group: group, running: task)
        } catch {
            await server.stop()
            throw error
        }
    }

    var webSocketURL: WebSocketURL { WebSocketURL("wss://localhost:\(httpPort)/xmpp-websocket")! }

    /// A client configuration for `username` over this server's WebSocket.
    func webSocketConfiguration(for username: String, resource: String? = nil) throws -> ClientConfiguration {
        var configuration = try server.configuration(for: username, resource: resource)
        configuration.webSocket = .endpoint(webSocketURL)
        return configuration
    }

    /// A client over the WebSocket with a fresh cache, and a recorder of its events.
    func webSocketClient(_ username: String, resource: String? = nil, configure: (inout ClientConfiguration) -> Void = { _ in }) throws
        -> (ChatClient, EventRecorder)
    {
        var configuration = try webSocketConfiguration(for: username, resource: resource)
        configure(&configuration)
        let client = try ChatClient(
            configuration: configuration, cachePath: server.directory + "/clients/\(username)-\(UUID().uuidString).sqlite",
            logger: quietLogger("client.\(username)"))
        return (client, EventRecorder(client.events))
    }

    /// Stops the HTTP service, then parleyd (its shutdown says what it is configured to say).
    func stop() async {
        await server.running.shutdown()
        await group.triggerGracefulShutdown()
        _ = try? await running.value
        await server.stop()
    }

    static func with(
        resumeTimeout: Duration = .seconds(300), configure: (inout ServerConfiguration) -> Void = { _ in },
        _ body: (WebSocketTestServer) async throws -> Void
    ) async throws {
        let server = try await start(resumeTimeout: resumeTimeout, configure: configure)
        do {
            try await body(server)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}
