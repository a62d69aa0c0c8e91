import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOSSL
import NIOConcurrencyHelpers
import NIOCore
import ParleyServer
import ServiceLifecycle

/// parleyd's one HTTP(S) listener (per configured interface), as a service-lifecycle service.
///
/// On graceful shutdown the listeners close and requests in flight (an upload half sent) run to
/// their end, but for no longer than the grace period: after it they are cancelled.
public final class HTTPService: Service, Sendable {
    private let applications: [Application<RouterResponder<HTTPContext>>]
    private let gracePeriod: Duration
    private let listening = NIOLockedValueBox<(addresses: [SocketAddress], waiters: [CheckedContinuation<[SocketAddress], Never>])>(([], []))

    /// `certificatePath`/`keyPath`: the c2s certificate (RunningServer has resolved or generated
    /// it), so that there is one place to configure certificates.
    public init(
        configuration: HTTPConfiguration, certificatePath: String, keyPath: String, gracePeriod: Duration,
        features: [any HTTPFeature], webSocket: WebSocketEndpoint? = nil, bosh: BOSHEndpoint? = nil, logger: Logger,
        onListening: @escaping @Sendable ([SocketAddress]) -> Void = { _ in }
    ) throws {
        let router = Router(context: HTTPContext.self)
        for feature in features { feature.mount(on: router) }
        let responder = router.buildResponder()
        // A client that stops sending (mid-upload, or after connecting) is dropped, so that an
        // idle connection cannot hold a slot or a file descriptor for ever.
        let http1Configuration = HTTP1Channel.Configuration(additionalChannelHandlers: [RequestBodyCoalescer()], idleTimeout: .seconds(60))
        var http1 = HTTPServerBuilder.http1(configuration: http1Configuration)
        if webSocket != nil || bosh != nil {
            // The same HTTP/1.1 service, where the WebSocket path may also upgrade (RFC 7395),
            // and BOSH connections are served without a task each.
            http1 = HTTPServerBuilder { responder in
                WebSocketUpgradeChannel(responder: responder, http1: http1Configuration, endpoint: webSocket, bosh: bosh)
            }
        }
        var server = http1
        if configuration.tls {
            let chain = try NIOSSLCertificate.fromPEMFile(certificatePath).map { NIOSSLCertificateSource.certificate($0) }
            let key = try NIOSSLPrivateKey(file: keyPath, format: .pem)
            server = try .tls(http1, tlsConfiguration: .makeServerConfiguration(certificateChain: chain, privateKey: .privateKey(key)))
        }
        self.gracePeriod = gracePeriod
        let count = configuration.interfaces.count
        var applications: [Application<RouterResponder<HTTPContext>>] = []
        for interface in configuration.interfaces {
            applications.append(
                Application(
                    responder: responder, server: server,
                    configuration: .init(address: .hostname(interface, port: configuration.port), serverName: nil),
                    onServerRunning: { [listening] channel in
                        guard let address = channel.localAddress else { return }
                        let ready = listening.withLockedValue { state -> (all: [SocketAddress], waiters: [CheckedContinuation<[SocketAddress], Never>])? in
                            state.addresses.append(address)
                            guard state.addresses.count == count else { return nil }
                            defer { state.waiters = [] }
                            return (state.addresses, state.waiters)
                        }
                        guard let ready else { return }
                        onListening(ready.all)
                        for waiter in ready.waiters { waiter.resume(returning: ready.all) }
                    },
                    logger: logger))
        }
        self.applications = applications
    }

    /// The bound addresses, once every listener is up (port 0 picks a free one).
    public func addresses() async -> [SocketAddress] {
        await withCheckedContinuation { continuation in
            let ready = listening.withLockedValue { state -> [SocketAddress]? in
                if state.addresses.count == applications.count { return state.addresses }
                state.waiters.append(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    public func run() async throws {
        let applications = self.applications
        let gracePeriod = self.gracePeriod
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await withThrowingTaskGroup(of: Void.self) { servers in
                    for application in applications { servers.addTask { try await application.run() } }
                    try await servers.waitForAll()
                }
            }
            // Hummingbird waits for every open request on graceful shutdown; this bounds the wait.
            group.addTask {
                try await gracefulShutdown()
                try await Task.sleep(for: gracePeriod)
            }
            try await group.next()
            group.cancelAll()
        }
    }
}
