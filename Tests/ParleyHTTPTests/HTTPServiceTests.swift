import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import ParleyServer
import ParleyTLS
import ServiceLifecycle
import Testing

@testable import ParleyHTTP

@Suite("ParleyHTTP service")
struct HTTPServiceTests {
    /// HTTPS with the same kind of certificate parleyd generates for c2s on first start.
    @Test func servesHTTPSWithTheServerCertificate() async throws {
        let directory = NSTemporaryDirectory() + "parley-https-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try SelfSignedCertificate.createIfMissing(
            certificatePath: directory + "/c.crt", privateKeyPath: directory + "/c.key", domain: "example.test")
        var configuration = HTTPConfiguration()
        configuration.port = 0
        let service = try HTTPService(
            configuration: configuration, certificatePath: directory + "/c.crt", keyPath: directory + "/c.key",
            gracePeriod: .seconds(1), features: [HealthFeature()], logger: Logger(label: "test"))
        let group = ServiceGroup(services: [service], logger: Logger(label: "test"))
        let running = Task { try await group.run() }
        let port = try #require(await service.addresses().first?.port)

        var tls = HTTPClient.Configuration()
        tls.tlsConfiguration = .makeClientConfiguration()
        tls.tlsConfiguration?.certificateVerification = .none
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: tls)
        let response = try await client.execute(HTTPClientRequest(url: "https://127.0.0.1:\(port)/health"), timeout: .seconds(10))
        #expect(response.status == .ok)
        #expect(String(buffer: try await response.body.collect(upTo: 100)) == "ok\n")
        // Plain HTTP on the TLS port gets no answer.
        await #expect(throws: (any Error).self) {
            _ = try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/health"), timeout: .seconds(5))
        }
        try await client.shutdown()
        await group.triggerGracefulShutdown()
        try await running.value
    }

    @Test func plainHTTPBeyondLoopbackNeedsToBeAskedFor() async throws {
        let directory = NSTemporaryDirectory() + "parley-http-config-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/parleyd.yaml"
        try Data("http:\n  interfaces: [0.0.0.0]\n  tls: false\n".utf8).write(to: URL(fileURLWithPath: path))
        do {
            _ = try await ServerConfiguration.load(file: path, environment: [:])
            Issue.record("plain HTTP on 0.0.0.0 was accepted")
        } catch {
            #expect("\(error)".contains("http.tls"))
            #expect("\(error)".contains("0.0.0.0"))
        }
        try Data("http:\n  interfaces: [0.0.0.0]\n  tls: false\n  allow_plain_http: true\nupload:\n  expiry_days: 3\n".utf8)
            .write(to: URL(fileURLWithPath: path))
        let configuration = try await ServerConfiguration.load(file: path, environment: [:])
        #expect(configuration.http.interfaces == ["0.0.0.0"])
        #expect(!configuration.http.tls)
        #expect(configuration.http.upload.expiryDays == 3)
    }
}
