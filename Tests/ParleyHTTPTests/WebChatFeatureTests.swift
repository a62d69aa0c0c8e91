import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import ParleyServer
import ServiceLifecycle
import Testing

@testable import ParleyHTTP

/// The web chat's files as served: types, caching, the CSP naming the WebSocket and upload
/// origins, and the page's own references all resolving to files that exist.
@Suite("Web chat files")
struct WebChatFeatureTests {
    @Test func servesEveryFileWithItsTypeAndTheCSP() async throws {
        var configuration = HTTPConfiguration()
        configuration.port = 0
        configuration.tls = false
        let feature = WebChatFeature(
            path: "/chat", webSocketURL: { "wss://chat.example.org:5281/xmpp-websocket" },
            uploadBaseURL: { "https://files.example.org" })
        let service = try HTTPService(
            configuration: configuration, certificatePath: "", keyPath: "", gracePeriod: .seconds(1), features: [feature],
            logger: Logger(label: "test"))
        let group = ServiceGroup(services: [service], logger: Logger(label: "test"))
        let running = Task { try await group.run() }
        let port = try #require(await service.addresses().first?.port)
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .disallow))
        func get(_ path: String, _ headers: [(String, String)] = []) async throws -> (HTTPClientResponse, String) {
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
            for (name, value) in headers { request.headers.add(name: name, value: value) }
            let response = try await client.execute(request, timeout: .seconds(10))
            return (response, String(buffer: try await response.body.collect(upTo: 1 << 20)))
        }

        let (redirect, _) = try await get("/chat")
        #expect(redirect.status == .permanentRedirect && redirect.headers["Location"] == ["/chat/"])
        let (index, html) = try await get("/chat/")
        #expect(index.status == .ok && index.headers["Content-Type"] == ["text/html; charset=utf-8"])
        let csp = try #require(index.headers["Content-Security-Policy"].first)
        #expect(csp.contains("script-src 'self';") && !csp.contains("unsafe"))
        #expect(csp.contains("connect-src 'self' wss://chat.example.org:5281 https://files.example.org;"))
        #expect(csp.contains("img-src 'self' data: blob: https://files.example.org;"))
        #expect(index.headers["X-Content-Type-Options"] == ["nosniff"] && index.headers["Cache-Control"] == ["no-cache"])

        for (name, file) in WebChatFiles.all {
            let (response, body) = try await get("/chat/\(name)")
            #expect(response.status == .ok, "\(name)")
            #expect(response.headers["Content-Type"] == [file.contentType], "\(name)")
            #expect(body.utf8.count == file.bytes.count && !body.isEmpty, "\(name)")
            let (again, _) = try await get("/chat/\(name)", [("If-None-Match", file.etag)])
            #expect(again.status == .notModified, "\(name)")
        }
        let (missing, text) = try await get("/chat/missing.js")
        #expect(missing.status == .notFound && text == "No such file in the web chat\n")

        try await client.shutdown()
        await group.triggerGracefulShutdown()
        try await running.value
    }

    /// Every `src`/`href` of the page and every module a script imports is one of the files
    /// served, so a file added without registering it fails here, not in a user's browser.
    @Test func everyReferenceOfThePageIsAFileServed() throws {
        let pattern = try NSRegularExpression(pattern: #"(?:src|href)="([^"]+)"|from "\./([^"]+)""#)
        var referenced: Set<String> = []
        for (name, file) in WebChatFiles.all where name.hasSuffix(".html") || name.hasSuffix(".js") {
            let text = String(decoding: file.bytes, as: UTF8.self)
            for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                for group in 1...2 {
                    if let range = Range(match.range(at: group), in: text) { referenced.insert(String(text[range])) }
                }
            }
        }
        #expect(referenced.isSuperset(of: ["ui.js", "chat.css", "client.js", "connection.js", "conversation.js", "rooms.js", "xml.js", "scram.js"]))
        #expect(referenced.subtracting(WebChatFiles.all.keys).isEmpty, "\(referenced.subtracting(WebChatFiles.all.keys))")
    }

    @Test func originOfAURL() {
        #expect(WebChatFeature.origin("wss://example.org:5281/xmpp-websocket") == "wss://example.org:5281")
        #expect(WebChatFeature.origin("https://example.org") == "https://example.org")
        #expect(WebChatFeature.origin("https://example.org?x") == "https://example.org")
    }
}
