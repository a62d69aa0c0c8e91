// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "Parley",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "ParleyCore", targets: ["ParleyCore"]),
        .library(name: "ParleyStream", targets: ["ParleyStream"]),
        .library(name: "ParleyTLS", targets: ["ParleyTLS"]),
        .library(name: "ParleyServer", targets: ["ParleyServer"]),
        .library(name: "ParleyMUC", targets: ["ParleyMUC"]),
        .executable(name: "parleyd", targets: ["parleyd"]),
        .library(name: "ParleyClient", targets: ["ParleyClient"]),
        .executable(name: "parley", targets: ["parley"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0", traits: [.defaults, "YAML"]),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        // Already required by swift-configuration; named here for FilePath in its FileProvider API.
        .package(url: "https://github.com/apple/swift-system", from: "1.5.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        // Already required by Hummingbird's TLS; named here to load the c2s certificate for it.
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        // Already required by Hummingbird; named here for the HTTP request parts its channel carries.
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.34.1"),
        // The PostgreSQL storage backend (ParleyPostgres), chosen by storage.backend.
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CLibXML2", pkgConfig: "libxml-2.0", providers: [.apt(["libxml2-dev"])]),
        .systemLibrary(
            name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CResolv"),
        .systemLibrary(name: "CMalloc"),
        .target(name: "ParleyCore", dependencies: ["CLibXML2", "COpenSSL"]),
        .target(
            name: "ParleyTLS",
            dependencies: [
                "COpenSSL",
                .product(name: "NIOCore", package: "swift-nio"),
            ]),
        .target(
            name: "ParleyStream",
            dependencies: [
                "ParleyCore", "ParleyTLS",
                .product(name: "NIOCore", package: "swift-nio"),
            ]),
        .target(
            name: "ParleyStorage",
            dependencies: [
                "ParleyCore",
                .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite's C API, for the archive writer's inserts (SQLiteRowInsert).
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ]),
        // The PostgreSQL backend of the store protocols; ParleyStorage never imports it.
        .target(
            name: "ParleyPostgres",
            dependencies: [
                "ParleyStorage", "ParleyCore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                // `parleyd storage copy` reads an existing SQLite data directory.
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .target(
            name: "ParleyServer",
            dependencies: [
                "ParleyCore", "ParleyStream", "ParleyTLS", "ParleyStorage", "CMalloc",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]),
        .target(
            name: "ParleyHTTP",
            dependencies: [
                "ParleyServer", "ParleyStorage", "ParleyCore", "ParleyStream",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "_NIOFileSystem", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            // The web chat's static files, compiled in (see WebChat/WebChatFiles.swift for why
            // not a resource bundle).
            resources: ["index.html", "chat.css", "xml.js", "scram.js", "connection.js", "conversation.js", "rooms.js", "client.js", "ui.js", "icon.svg"]
                .map { .embedInCode("WebChat/Files/\($0)") }),
        // A hosted service (XEP-0045 at conference.<domain>): it uses ParleyServer's public
        // API, and ParleyServer never imports it; parleyd wires it in.
        .target(
            name: "ParleyMUC",
            dependencies: [
                "ParleyServer", "ParleyCore", "ParleyStorage",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // Several parleyd nodes on one PostgreSQL database: leases, the session directory and
        // the nodes' inboxes. It uses ParleyServer's public API; ParleyServer never imports it.
        .target(
            name: "ParleyCluster",
            dependencies: [
                "ParleyServer", "ParleyCore", "ParleyPostgres",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .executableTarget(
            name: "parleyd",
            dependencies: [
                "ParleyServer", "ParleyMUC", "ParleyCore", "ParleyStorage", "ParleyHTTP", "ParleyPostgres", "ParleyCluster",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        .executableTarget(
            name: "ParleyBench",
            dependencies: [
                "ParleyCore", "CLibXML2", "ParleyStream", "ParleyServer", "ParleyStorage", "ParleyTLS",
                // The upload benchmark's HTTP(S) client.
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "GRDB", package: "GRDB.swift"),
                // The XMPP-over-WebSocket clients.
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ],
            path: "bench/ParleyBench"),
        .target(
            name: "ParleyClient",
            dependencies: [
                "ParleyCore", "ParleyStream", "ParleyTLS", "CResolv",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "GRDB", package: "GRDB.swift"),
                // XEP-0363 transfers: HTTP(S) PUT and GET streamed from and to disk.
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "_NIOFileSystem", package: "swift-nio"),
                // XMPP over WebSocket (RFC 7395).
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ]),
        .executableTarget(
            name: "parley",
            dependencies: [
                "ParleyClient", "ParleyCore", "ParleyTLS",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .target(
            name: "ParleyTestSupport",
            dependencies: ["ParleyCore", "CLibXML2"],
            path: "Tests/ParleyTestSupport"),
        .testTarget(name: "ParleyCoreTests", dependencies: ["ParleyCore", "ParleyTestSupport"]),
        .executableTarget(name: "ParleyFuzz", dependencies: ["ParleyCore"], path: "fuzz/ParleyFuzz"),
        .testTarget(
            name: "ParleyTLSTests",
            dependencies: [
                "ParleyTLS", "COpenSSL", "ParleyTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]),
        .testTarget(
            name: "ParleyStreamTests",
            dependencies: [
                "ParleyStream", "ParleyCore", "ParleyTLS", "ParleyTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]),
        // One conformance suite for both backends: SQLite and a throwaway PostgreSQL (PostgresCluster).
        .testTarget(
            name: "ParleyStorageTests",
            dependencies: [
                "ParleyStorage", "ParleyCore", "ParleyPostgres", "ParleyTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "ParleyServerTests",
            dependencies: [
                "ParleyServer", "ParleyStream", "ParleyCore", "ParleyTLS", "ParleyStorage", "ParleyTestSupport",
                // The MUC and upload scenarios need the server's scenario harness, so they live here.
                "ParleyMUC", "ParleyHTTP",
                // Scenarios on the PostgreSQL backend, and clusters of nodes on it (the client
                // library resuming on another node, too).
                "ParleyPostgres", "ParleyCluster", "ParleyClient",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                // Scenarios hold the server's database write lock to play a slow disk.
                .product(name: "GRDB", package: "GRDB.swift"),
                // The XMPP-over-WebSocket scenarios' client.
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ]),
        .testTarget(
            name: "ParleyHTTPTests",
            dependencies: [
                "ParleyHTTP", "ParleyServer", "ParleyStorage", "ParleyCore", "ParleyTLS",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "ParleyClientTests",
            dependencies: [
                "ParleyClient", "ParleyServer", "ParleyStorage", "ParleyCore", "ParleyTLS", "ParleyTestSupport",
                // Media messages need parleyd's upload service and HTTP listener in the test server,
                // and its rooms for files sent to a room.
                "ParleyHTTP", "ParleyMUC",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                // A WebSocket server that is not an XMPP one, for the client's errors.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ]),
    ]
)
