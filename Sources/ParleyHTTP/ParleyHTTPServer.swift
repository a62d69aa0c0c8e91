import Foundation
import Logging
import NIOCore
import ParleyServer
import ParleyStorage
import ServiceLifecycle

/// ParleyHTTP as configured for one running server: the listener with its features, the
/// upload slots the `upload.<domain>` hosted service will hand out, and upload maintenance.
public final class ParleyHTTPServer: Service, Sendable {
    public let service: HTTPService
    /// Nil when uploads are disabled.
    public let uploadSlots: UploadSlots?
    public let uploads: UploadMaintenance?
    /// XEP-0156 discovery of the WebSocket and BOSH endpoints; nil when both are off.
    public let hostMeta: HostMetaFeature?
    /// Where the web chat is (`/chat/`); nil when it is off, or WebSocket is.
    public let webChatPath: String?
    /// XMPP over BOSH; nil when off.
    public let bosh: BOSHEndpoint?
    private let feed: any AccountChangeFeed
    private let configuration: HTTPConfiguration
    private let maintenanceInterval: Duration

    public init(
        configuration: ServerConfiguration, storage: any ServerStorage, certificatePath: String, keyPath: String,
        extraFeatures: [any HTTPFeature] = [], maintenanceInterval: Duration = .seconds(10), xmpp: RunningServer? = nil,
        logger: Logger
    ) throws {
        let http = configuration.http
        var features: [any HTTPFeature] = [HealthFeature()]
        if http.upload.enabled {
            let directory = http.upload.directory ?? "\(configuration.dataDirectory)/uploads"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let secret = try UploadSlots.secret(
                configured: http.upload.secret, path: "\(configuration.dataDirectory)/upload.secret")
            let store = DirectoryUploadStore(directory: directory)
            let slots = UploadSlots(
                configuration: http.upload, baseURL: Self.baseURL(http, domain: configuration.domain, port: http.port),
                secret: secret, metadata: storage)
            features.append(UploadFeature(slots: slots, store: store))
            uploadSlots = slots
            uploads = UploadMaintenance(metadata: storage, store: store, logger: logger)
        } else {
            uploadSlots = nil
            uploads = nil
        }
        // XMPP over WebSocket needs the XMPP server's sessions, so only parleyd (or a test) that
        // passes it gets the endpoint and its XEP-0156 announcement.
        var webSocket: WebSocketEndpoint?
        var hostMeta: HostMetaFeature?
        let base = Self.baseURL(http, domain: configuration.domain, port: http.port)
        let webSocketOn = http.webSocket.enabled && xmpp != nil, boshOn = http.bosh.enabled && xmpp != nil
        if webSocketOn, let xmpp {
            webSocket = WebSocketEndpoint(configuration: http.webSocket, server: xmpp, httpTLS: http.tls)
        }
        var boshEndpoint: BOSHEndpoint?
        if boshOn, let xmpp {
            let endpoint = BOSHEndpoint(configuration: http.bosh, server: xmpp, httpTLS: http.tls, logger: logger)
            features.append(endpoint)
            boshEndpoint = endpoint
        }
        bosh = boshEndpoint
        if webSocketOn || boshOn {
            let meta = HostMetaFeature(
                webSocketURL: webSocketOn ? HostMetaFeature.webSocketURL(httpBase: base, path: http.webSocket.path) : "",
                boshURL: boshOn ? Self.boshURL(httpBase: base, path: http.bosh.path) : "")
            features.append(meta)
            hostMeta = meta
            // The page speaks XMPP over WebSocket only: BOSH alone does not serve it.
            if webSocketOn && http.webChat.enabled {
                let slots = uploadSlots
                features.append(WebChatFeature(path: http.webChat.path, webSocketURL: { meta.url }, uploadBaseURL: { slots?.baseURL }))
            }
        }
        self.hostMeta = hostMeta
        webChatPath = webSocketOn && http.webChat.enabled ? http.webChat.path + "/" : nil
        let slots = uploadSlots, domain = configuration.domain, announced = hostMeta
        service = try HTTPService(
            configuration: http, certificatePath: certificatePath, keyPath: keyPath,
            gracePeriod: configuration.shutdown.gracePeriod, features: features + extraFeatures, webSocket: webSocket, bosh: boshEndpoint, logger: logger
        ) { addresses in
            // With port 0 the upload URLs can only name the port once it is bound.
            if http.port == 0, http.publicURL == nil, let port = addresses.first?.port {
                slots?.baseURL = Self.baseURL(http, domain: domain, port: port)
                let base = Self.baseURL(http, domain: domain, port: port)
                if webSocketOn { announced?.url = HostMetaFeature.webSocketURL(httpBase: base, path: http.webSocket.path) }
                if boshOn { announced?.boshURL = Self.boshURL(httpBase: base, path: http.bosh.path) }
            }
        }
        feed = storage
        self.configuration = http
        self.maintenanceInterval = maintenanceInterval
    }

    static func boshURL(httpBase: String, path: String) -> String {
        var base = httpBase
        while base.hasSuffix("/") { base.removeLast() }
        return base + path
    }

    static func baseURL(_ http: HTTPConfiguration, domain: String, port: Int) -> String {
        http.publicURL ?? "\(http.tls ? "https" : "http")://\(domain):\(port)"
    }

    /// The bound addresses, once listening.
    public func addresses() async -> [SocketAddress] {
        await service.addresses()
    }

    public func run() async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            if let uploads {
                let feed = self.feed, days = configuration.upload.expiryDays, interval = maintenanceInterval
                group.addTask { await cancelWhenGracefulShutdown { await uploads.run(feed: feed, expiryDays: days, interval: interval) } }
            }
            // Not a child task: maintenance ends at once on shutdown, the listener drains.
            defer { group.cancelAll() }
            try await service.run()
        }
    }
}
