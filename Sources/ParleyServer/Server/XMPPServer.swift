import Logging
import NIOCore
import NIOPosix
import ParleyCore
import ParleyStorage
import ParleyStream
import ParleyTLS
import Prometheus
import ServiceLifecycle

/// `parleyd` as a swift-service-lifecycle `Service`: starts everything the configuration asks
/// for, runs until a graceful shutdown is requested (SIGTERM), then drains.
public final class XMPPServer: Service {
    public let configuration: ServerConfiguration
    private let logger: Logger
    private let group: any EventLoopGroup
    private let prometheus: PrometheusCollectorRegistry?
    private let onStart: @Sendable (RunningServer) -> Void
    private let hostedServices: [any HostedService]
    private let storage: (any ServerStorage)?
    private let cluster: (any ClusterMember)?

    public init(
        configuration: ServerConfiguration, logger: Logger,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        prometheus: PrometheusCollectorRegistry? = nil,
        hostedServices: [any HostedService] = [],
        storage: (any ServerStorage)? = nil,
        cluster: (any ClusterMember)? = nil,
        onStart: @escaping @Sendable (RunningServer) -> Void = { _ in }
    ) {
        self.hostedServices = hostedServices
        self.storage = storage
        self.cluster = cluster
        self.configuration = configuration
        self.logger = logger
        self.group = group
        self.prometheus = prometheus
        self.onStart = onStart
    }

    public func run() async throws {
        let running = try await RunningServer.start(
            configuration: configuration, logger: logger, group: group, prometheus: prometheus,
            hostedServices: hostedServices, storage: storage, cluster: cluster)
        onStart(running)
        await withGracefulShutdownHandler {
            await running.waitUntilStopped()
        } onGracefulShutdown: {
            Task { await running.shutdown() }
        }
    }
}
