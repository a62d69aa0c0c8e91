import Foundation
import Logging
import ParleyClient
import ParleyCore
import ParleyHTTP
import ParleyMUC
import ParleyServer
import ParleyTestSupport
import ParleyTLS
import ServiceLifecycle
import Synchronization

/// A real parleyd with XEP-0363 as `parleyd run` wires it: the upload service at
/// upload.localhost and ParleyHTTP on a loopback port, over HTTPS with the c2s certificate
/// (self-signed for localhost, which the clients are told to trust for HTTPS).
final class UploadTestServer: Sendable {
    let server: TestServer
    let http: ParleyHTTPServer
    private let group: ServiceGroup
    private let running: Task<Void, any Error>

    var uploadDirectory: String { server.directory + "/uploads" }

    private init(server: TestServer, http: ParleyHTTPServer, group: ServiceGroup, running: Task<Void, any Error>) {
        self.server = server
        self.http = http
        self.group = group
        self.running = running
    }

    /// `rooms`: with parleyd's MUC service at conference.localhost too.
    static func start(maxFileSize: Int = 20_000_000, rooms: Bool = false, tls: Bool = true) async throws -> UploadTestServer {
        let directory = NSTemporaryDirectory() + "parley-client-media-" + UUID().uuidString
        var configuration = ServerConfiguration()
        configuration.dataDirectory = directory
        configuration.c2s.port = 0
        configuration.c2s.directTLSPort = 0
        configuration.shutdown.gracePeriod = .seconds(2)
        configuration.http.enabled = true
        configuration.http.port = 0
        configuration.http.tls = tls
        configuration.http.upload.maxFileSize = maxFileSize
        configuration.http.upload.secret = "client-media-tests-secret-0123456789abcdef"
        (configuration.tls.certificate, configuration.tls.key) = try await rootCapableCertificate(in: directory + "/test-tls")
        let upload = UploadService(
            domain: configuration.uploadDomain, serverDomain: configuration.domain, maxFileSize: configuration.http.upload.maxFileSize)
        var services: [any HostedService] = [upload]
        if rooms {
            services.append(MUCService(
                settings: MUCService.Settings(domain: configuration.mucDomain, serverDomain: configuration.domain), logger: quietLogger("muc")))
        }
        let running = try await RunningServer.start(configuration: configuration, logger: quietLogger("parleyd"), hostedServices: services)
        let logger = quietLogger("parleyd.http")
        do {
            let http = try ParleyHTTPServer(
                configuration: running.configuration, storage: running.storage, certificatePath: running.certificatePath,
                keyPath: running.configuration.tlsKeyPath, logger: logger)
            if let slots = http.uploadSlots { upload.attach(slots) }
            let group = ServiceGroup(services: [http], logger: logger)
            let task = Task { try await group.run() }
            _ = await http.addresses()
            return UploadTestServer(server: TestServer(running: running, directory: directory), http: http, group: group, running: task)
        } catch {
            await running.shutdown()
            throw error
        }
    }

    /// A client for `username` that trusts the server's certificate for HTTPS too.
    func client(_ username: String) throws -> (ChatClient, EventRecorder) {
        var configuration = try server.configuration(for: username)
        configuration.httpTrustedCertificateFile = server.running.certificatePath
        let client = try ChatClient(
            configuration: configuration, cachePath: server.directory + "/clients/\(username)-\(UUID().uuidString).sqlite",
            logger: quietLogger("client.\(username)"))
        return (client, EventRecorder(client.events))
    }

    /// The files the upload store holds (not the partial ones being written).
    func storedFiles() -> [String] {
        (FileManager.default.subpaths(atPath: uploadDirectory) ?? []).filter { path in
            var isDirectory: ObjCBool = false
            let name = (path as NSString).lastPathComponent
            return FileManager.default.fileExists(atPath: uploadDirectory + "/" + path, isDirectory: &isDirectory) && !isDirectory.boolValue
                && !name.hasPrefix(".")
        }
    }

    func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await running.value
        await server.stop()
    }

    /// Runs `body` with a fresh server and stops it afterwards whatever happened.
    static func with(
        maxFileSize: Int = 20_000_000, rooms: Bool = false, tls: Bool = true, _ body: (UploadTestServer) async throws -> Void
    ) async throws {
        let server = try await start(maxFileSize: maxFileSize, rooms: rooms, tls: tls)
        do {
            try await body(server)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}

/// parleyd's own first-start certificate for localhost, written under `directory`: the client
/// trusts exactly this file for the upload service's HTTPS, as a user of `make run` would.
func rootCapableCertificate(in directory: String) async throws -> (certificate: String, key: String) {
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let (certificate, key) = (directory + "/localhost.crt", directory + "/localhost.key")
    try SelfSignedCertificate.createIfMissing(certificatePath: certificate, privateKeyPath: key, domain: "localhost")
    return (certificate, key)
}

/// Writes `bytes` to a new file named `name` in a fresh temporary folder; its path.
func temporaryFile(_ name: String, _ bytes: [UInt8]) throws -> String {
    let folder = NSTemporaryDirectory() + "parley-media-source-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    let path = folder + "/" + name
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    return path
}

/// Stanzas a handler saw, for assertions.
final class StanzaLog: Sendable {
    private let stanzas = Mutex<[XMLElement]>([])
    var all: [XMLElement] { stanzas.withLock { $0 } }
    func append(_ stanza: XMLElement) { stanzas.withLock { $0.append(stanza) } }
}

/// Progress reports as a handler receives them, for assertions.
final class ProgressLog: Sendable {
    private let reports = Mutex<[TransferProgress]>([])
    var all: [TransferProgress] { reports.withLock { $0 } }
    func append(_ progress: TransferProgress) { reports.withLock { $0.append(progress) } }
}
