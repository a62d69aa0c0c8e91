import ArgumentParser
import Foundation
import Logging
import Metrics
import ParleyCluster
import ParleyHTTP
import ParleyServer
import Prometheus
import ServiceLifecycle

struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the server until SIGTERM or SIGINT.")

    @OptionGroup var options: ConfigOptions

    func run() async throws {
        let configuration = try await loadConfiguration(options)
        let level = configuration.logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "parleyd")
        var prometheus: PrometheusCollectorRegistry? = nil
        if configuration.metrics.enabled {
            let registry = PrometheusCollectorRegistry()
            MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
            prometheus = registry
        }
        let (started, starting) = AsyncStream.makeStream(of: RunningServer.self)
        let hostedServices = makeHostedServices(configuration, logger: logger)
        // SQLite (the default) is opened by the server itself; PostgreSQL here, where it is imported.
        let postgres = try await openPostgresIfConfigured(configuration, logger: logger)
        // The configuration loader refuses a cluster without PostgreSQL.
        let cluster = configuration.cluster.enabled ? postgres.map { ClusterNode(configuration, storage: $0, logger: logger) } : nil
        let server = XMPPServer(
            configuration: configuration, logger: logger, prometheus: prometheus, hostedServices: hostedServices,
            storage: postgres, cluster: cluster
        ) { running in
            printBanner(running)
            starting.yield(running)
            starting.finish()
        }
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: server)]
        if configuration.http.enabled {
            services.append(.init(service: HTTPLauncher(
                started: started, uploadService: hostedServices.lazy.compactMap { $0 as? UploadService }.first, logger: logger)))
        }
        let group = ServiceGroup(
            configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        do {
            try await group.run()
        } catch {
            await postgres?.close()
            throw CleanExit.message("parleyd: \(error)")
        }
        await postgres?.close()
    }

    private func printBanner(_ running: RunningServer) {
        let configuration = running.configuration
        var lines = ["parleyd serving \(configuration.domain)"]
        for address in running.c2sAddresses { lines.append("  client connections (STARTTLS): \(describe(address))") }
        for address in running.directTLSAddresses { lines.append("  client connections (direct TLS): \(describe(address))") }
        if let metrics = running.metricsAddress { lines.append("  metrics: http://\(describe(metrics))/metrics") }
        lines.append("  certificate: \(running.certificatePath)")
        if let fingerprint = running.certificateFingerprint { lines.append("  certificate SHA-256 fingerprint: \(fingerprint)") }
        switch configuration.storage.backend {
        case .sqlite: lines.append("  data: \(configuration.dataDirectory) (SQLite: \(configuration.sqlitePath))")
        case .postgresql: lines.append("  data: \(configuration.dataDirectory) (PostgreSQL: \(storageLocation(configuration)))")
        }
        if configuration.cluster.enabled { lines.append("  cluster node: \(configuration.clusterNodeID)") }
        let configArgument = options.config.map { " --config \($0)" } ?? ""
        lines.append("  add a user: parleyd adduser\(configArgument) alice   (from this checkout: make adduser USER=alice)")
        print(lines.joined(separator: "\n"))
        fflush(nil)
    }

    private func describe(_ address: SocketAddress) -> String {
        let host = address.ipAddress ?? "?"
        return host.contains(":") ? "[\(host)]:\(address.port ?? 0)" : "\(host):\(address.port ?? 0)"
    }
}

import NIOCore

func loadConfiguration(_ options: ConfigOptions) async throws -> ServerConfiguration {
    do {
        return try await ServerConfiguration.load(file: options.config, environment: ProcessInfo.processInfo.environment)
    } catch {
        throw ValidationError("configuration: \(error)")
    }
}
