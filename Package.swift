// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Parley",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "ParleyCore", targets: ["ParleyCore"]),
        .library(name: "ParleyStream", targets: ["ParleyStream"]),
        .library(name: "ParleyTLS", targets: ["ParleyTLS"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CLibXML2", pkgConfig: "libxml-2.0", providers: [.apt(["libxml2-dev"])]),
        .systemLibrary(
            name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
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
            name: "ParleyTestSupport",
            dependencies: ["ParleyCore", "CLibXML2"],
            path: "Tests/ParleyTestSupport"),
        .testTarget(name: "ParleyCoreTests", dependencies: ["ParleyCore", "ParleyTestSupport"]),
        .executableTarget(
            name: "ParleyBench", dependencies: ["ParleyCore", "CLibXML2"], path: "bench/ParleyBench"),
        .executableTarget(name: "ParleyFuzz", dependencies: ["ParleyCore"], path: "fuzz/ParleyFuzz"),
        .testTarget(
            name: "ParleyTLSTests",
            dependencies: [
                "ParleyTLS", "COpenSSL",
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
    ]
)
