import Foundation
import ParleyTLS

/// Certificates generated once per test run with `SelfSignedCertificate` (no keys in git).
enum TestCertificates {
    static let domain = "example.test"

    /// The server identity most tests use.
    static let server: SelfSignedCertificate = try! SelfSignedCertificate.generate(domain: domain)
    /// An unrelated certificate, for "wrong pin" tests.
    static let other: SelfSignedCertificate = try! SelfSignedCertificate.generate(domain: "other.test")

    static func serverContext(alpn: [String] = ["xmpp-client"]) throws -> TLSContext {
        try TLSContext(
            server: TLSServerConfiguration(
                certificateChain: .pem(server.certificatePEM), privateKey: .pem(server.privateKeyPEM),
                alpnProtocols: alpn))
    }

    /// A client that trusts the test server's certificate as a root, so that the normal
    /// chain + hostname path is exercised.
    static func trustingClientContext(alpn: [String] = []) throws -> TLSContext {
        try TLSContext(
            client: TLSClientConfiguration(trust: .roots([.pem(server.certificatePEM)]), alpnProtocols: alpn))
    }

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("parley-tls-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
