import Foundation
import ParleyCore
import ParleyServer
import ParleyTestSupport
import Testing

/// Rolling restarts for BOSH (`shutdown.redirect_bosh_uri`): a graceful shutdown ends each BOSH
/// session with XEP-0124 §17.2's `see-other-uri` and the `<uri/>` to POST to instead, while a
/// TCP session of the same server gets its `<see-other-host/>`.
@Suite struct BOSHRedirectScenarios {
    static let otherURI = "https://node2.example.org:5281/http-bind"

    @Test func shutdownSendsBOSHSessionsToTheConfiguredURI() async throws {
        try await BOSHScenarios.with({
            $0.shutdown.redirectBOSHURI = Self.otherURI
            $0.shutdown.redirectHost = "node2.example.org:5222"
        }) { server, port in
            let tcp = try await server.login("bob", resource: "home")
            let (web, answer) = try await BOSHScenarios.heldRequestAnsweredByShutdown(of: server, port: port)
            #expect(answer.isTerminate && answer.condition == "see-other-uri", "\(answer.text)")
            let uri = try #require(answer.payload.last, "\(answer.text)")
            #expect(uri.name == "uri" && uri.namespace == BOSHTestClient.httpbind && uri.text == Self.otherURI, "\(answer.text)")
            #expect(!answer.text.contains("stream:error"), "\(answer.text)")
            try SchemaValidator.shared.validate(answer.text)
            // A request that comes later learns the same.
            let later = try await web.request()
            #expect(later.condition == "see-other-uri" && later.payload.last?.text == Self.otherURI, "\(later.text)")
            // TCP is told the host.
            let error = try await tcp.expectStreamError(.seeOtherHost)
            #expect(error.otherHost == "node2.example.org:5222")
        }
    }

    @Test func withOnlyAHostConfiguredBOSHGetsSystemShutdown() async throws {
        try await BOSHScenarios.with({ $0.shutdown.redirectHost = "node2.example.org:5222" }) { server, port in
            let (_, answer) = try await BOSHScenarios.heldRequestAnsweredByShutdown(of: server, port: port)
            #expect(answer.isTerminate && answer.condition == "remote-stream-error", "\(answer.text)")
            #expect(answer.payload.last?.firstChild("system-shutdown") != nil, "\(answer.text)")
        }
    }

    @Test func theBOSHRedirectIsReadAndCheckedAtStartUp() async throws {
        let configured = try await withConfigurationFile("shutdown:\n  redirect_bosh_uri: \(Self.otherURI)\n") { path in
            try await ServerConfiguration.load(file: path, environment: [:])
        }
        #expect(configured.shutdown.redirectBOSHURI == Self.otherURI)
        let defaults = try await withConfigurationFile("domain: example.org\n") { path in
            try await ServerConfiguration.load(file: path, environment: [:])
        }
        #expect(defaults.shutdown.redirectBOSHURI == nil)
        for value in ["wss://node2.example.org/http-bind", "https:///http-bind", "node2.example.org"] {
            do {
                _ = try await withConfigurationFile("shutdown:\n  redirect_bosh_uri: \(value)\n") { path in
                    try await ServerConfiguration.load(file: path, environment: [:])
                }
                Issue.record("accepted \(value)")
            } catch let error as ConfigurationError {
                #expect(error.key == "shutdown.redirect_bosh_uri", "\(error)")
                #expect(error.description.contains("expected a BOSH URL"), "\(error)")
            }
        }
    }
}
