import Foundation
import Logging
import ParleyHTTP
import ParleyServer
import ServiceLifecycle

/// Runs ParleyHTTP next to the XMPP server once that has started: it needs the server's
/// storage and the certificate it resolved (or generated on first start).
struct HTTPLauncher: Service {
    let started: AsyncStream<RunningServer>
    /// The XMPP side of uploads, which hands out the listener's slots.
    let uploadService: UploadService?
    let logger: Logger

    func run() async throws {
        let running = await cancelWhenGracefulShutdown { () async -> RunningServer? in
            for await running in started { return running }
            return nil
        }
        guard let running = running ?? nil else { return }
        let configuration = running.configuration
        let http = try ParleyHTTPServer(
            configuration: configuration, storage: running.storage, certificatePath: running.certificatePath,
            keyPath: configuration.tlsKeyPath, xmpp: running, logger: logger)
        if let slots = http.uploadSlots { uploadService?.attach(slots) }
        let scheme = configuration.http.tls ? "https" : "http"
        Task {
            for address in await http.addresses() {
                let host = address.ipAddress ?? "?"
                print("  \(scheme): \(scheme)://\(host.contains(":") ? "[\(host)]" : host):\(address.port ?? 0)/ (uploads: \(http.uploadSlots?.baseURL ?? "disabled"))")
                if let webSocket = http.hostMeta?.url, !webSocket.isEmpty { print("  websocket: \(webSocket) (announced at /.well-known/host-meta)") }
                if let bosh = http.hostMeta?.boshURL, !bosh.isEmpty { print("  bosh: \(bosh) (announced at /.well-known/host-meta)") }
                if let chat = http.webChatPath { print("  web chat: \(scheme)://\(host.contains(":") ? "[\(host)]" : host):\(address.port ?? 0)\(chat)") }
                fflush(nil)
            }
        }
        try await withGracefulShutdownHandler {
            try await http.run()
        } onGracefulShutdown: {
            running.announceShutdown()
        }
    }
}
