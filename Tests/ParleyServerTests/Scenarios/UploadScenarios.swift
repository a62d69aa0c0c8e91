import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import ParleyCore
import ParleyHTTP
import ParleyServer
import ParleyTestSupport
import ServiceLifecycle
import Testing

/// XEP-0363 end to end: slot requests over a real XMPP stream to the upload service at
/// `upload.localhost`, answered with URLs of a real HTTP listener that a real PUT and GET use.
@Suite struct UploadScenarios {
    static let service = "upload.localhost"
    static let namespace = "urn:xmpp:http:upload:0"

    /// A server with the upload service and ParleyHTTP (plain HTTP on loopback) over its database.
    private static func with<T>(
        _ configure: (inout HTTPConfiguration.Upload) -> Void = { _ in }, _ body: (TestServer) async throws -> T
    ) async throws -> T {
        var upload = HTTPConfiguration.Upload()
        upload.secret = "upload-scenario-secret-0123456789abcdef"
        upload.maxFileSize = 1_000
        configure(&upload)
        let service = UploadService(domain: Self.service, serverDomain: TestServer.domain, maxFileSize: upload.maxFileSize)
        return try await TestServer.with(hostedServices: [service], { configuration in
            configuration.http.enabled = true
            configuration.http.port = 0
            configuration.http.tls = false
            configuration.http.upload = upload
        }) { server in
            var logger = Logger(label: "parley.scenario.http")
            logger.logLevel = .critical
            let http = try ParleyHTTPServer(
                configuration: server.configuration, storage: server.running.storage, certificatePath: "", keyPath: "",
                logger: logger)
            let group = ServiceGroup(services: [http], logger: logger)
            let running = Task { try await group.run() }
            let port = try #require(await http.addresses().first?.port)
            // The URLs name the server's domain; this client reaches it on loopback only.
            http.uploadSlots?.baseURL = "http://127.0.0.1:\(port)"
            if let slots = http.uploadSlots { service.attach(slots) }
            do {
                let result = try await body(server)
                await group.triggerGracefulShutdown()
                try await running.value
                return result
            } catch {
                await group.triggerGracefulShutdown()
                try? await running.value
                throw error
            }
        }
    }

    private static func request(_ id: String, filename: String? = "photo.png", size: String? = "11", type: String? = "image/png") -> String {
        var attributes = ""
        if let filename { attributes += " filename='\(filename)'" }
        if let size { attributes += " size='\(size)'" }
        if let type { attributes += " content-type='\(type)'" }
        return "<iq type='get' id='\(id)' to='\(service)'><request xmlns='\(namespace)'\(attributes)/></iq>"
    }

    @Test func theServiceDescribesItselfAndTheServerListsIt() async throws {
        try await Self.with { server in
            let alice = try await server.im("alice")
            let info = try await alice.query(
                "<iq type='get' id='i1' to='\(Self.service)'><query xmlns='http://jabber.org/protocol/disco#info'/></iq>", id: "i1")
            try SchemaValidator.shared.validate(info.xmlString())
            let query = try #require(info.firstChild("query", namespace: XMLNamespace.discoInfo), "\(info.xmlString())")
            let identity = query.firstChild("identity")
            #expect(identity?[attribute: "category"] == "store" && identity?[attribute: "type"] == "file")
            #expect(identity?[attribute: "name"] == "HTTP File Upload")
            #expect(query.children("feature").contains { $0[attribute: "var"] == Self.namespace }, "\(info.xmlString())")
            let form = try #require(query.firstChild("x", namespace: XMLNamespace.dataForms), "\(info.xmlString())")
            let fields = Dictionary(
                form.children("field").map { ($0[attribute: "var"] ?? "", $0.firstChild("value")?.text ?? "") }) { a, _ in a }
            #expect(fields == ["FORM_TYPE": Self.namespace, "max-file-size": "1000"], "\(form.xmlString())")

            let items = try await alice.query(
                "<iq type='get' id='i2' to='\(Self.service)'><query xmlns='http://jabber.org/protocol/disco#items'/></iq>", id: "i2")
            #expect(items.type == "result" && items.firstChild("query")?.elements.isEmpty == true, "\(items.xmlString())")

            let domainItems = try await alice.query(
                "<iq type='get' id='i3' to='localhost'><query xmlns='http://jabber.org/protocol/disco#items'/></iq>", id: "i3")
            let listed = domainItems.firstChild("query", namespace: XMLNamespace.discoItems)?.children("item") ?? []
            #expect(listed.contains { $0[attribute: "jid"] == Self.service && $0[attribute: "name"] == "HTTP File Upload" },
                "\(domainItems.xmlString())")
        }
    }

    @Test func aSlotsURLsTakeTheFileAndServeItBack() async throws {
        try await Self.with { server in
            let alice = try await server.im("alice")
            let reply = try await alice.query(Self.request("s1"), id: "s1")
            try SchemaValidator.shared.validate(reply.xmlString())
            #expect(reply.type == "result" && reply.from == Self.service, "\(reply.xmlString())")
            let slot = try #require(reply.firstChild("slot", namespace: Self.namespace), "\(reply.xmlString())")
            let put = try #require(slot.firstChild("put", namespace: Self.namespace)?[attribute: "url"])
            let get = try #require(slot.firstChild("get", namespace: Self.namespace)?[attribute: "url"])
            #expect(get.hasSuffix("/photo.png") && put.hasPrefix(get + "?"), "\(slot.xmlString())")

            let bytes = Array("hello world".utf8)
            var upload = HTTPClientRequest(url: put)
            upload.method = .PUT
            upload.headers.add(name: "Content-Type", value: "image/png")
            upload.body = .bytes(ByteBuffer(bytes: bytes))
            let stored = try await HTTPClient.shared.execute(upload, timeout: .seconds(60))
            #expect(stored.status.code == 201)
            let download = try await HTTPClient.shared.execute(HTTPClientRequest(url: get), timeout: .seconds(60))
            #expect(download.status.code == 200)
            let body = try await download.body.collect(upTo: 1 << 20)
            #expect(Array(body.readableBytesView) == bytes)
        }
    }

    @Test func aFileOverTheLimitIsRefusedWithTheLimit() async throws {
        try await Self.with { server in
            let alice = try await server.im("alice")
            let reply = try await alice.query(Self.request("big", size: "1001"), id: "big")
            try SchemaValidator.shared.validate(reply.xmlString())
            #expect(reply.stanzaErrorCondition == .notAcceptable, "\(reply.xmlString())")
            let max = reply.firstChild("error")?.firstChild("file-too-large", namespace: Self.namespace)?.firstChild("max-file-size")
            #expect(max?.text == "1000", "\(reply.xmlString())")
        }
    }

    @Test func overTheDailyQuotaTheRefusalSaysWhenToRetry() async throws {
        try await Self.with({ $0.dailyQuota = 20 }) { server in
            let alice = try await server.im("alice")
            let first = try await alice.query(Self.request("q1"), id: "q1")
            #expect(first.type == "result", "\(first.xmlString())")
            let second = try await alice.query(Self.request("q2"), id: "q2")
            try SchemaValidator.shared.validate(second.xmlString())
            #expect(second.stanzaErrorCondition == .resourceConstraint, "\(second.xmlString())")
            #expect(second.firstChild("error")?[attribute: "type"] == "wait")
            let stamp = second.firstChild("error")?.firstChild("retry", namespace: Self.namespace)?[attribute: "stamp"]
            let retry = try #require(stamp.flatMap { ISO8601DateFormatter().date(from: $0) }, "\(second.xmlString())")
            #expect(retry > Date().addingTimeInterval(86_000), "a day after the first slot: \(second.xmlString())")
        }
    }

    @Test func anAccountThatMayNotUploadIsRefused() async throws {
        try await Self.with({ $0.allowed = "none" }) { server in
            let alice = try await server.im("alice")
            let reply = try await alice.query(Self.request("no"), id: "no")
            try SchemaValidator.shared.validate(reply.xmlString())
            #expect(reply.stanzaErrorCondition == .notAllowed && reply.stanzaErrorText != nil, "\(reply.xmlString())")
        }
    }

    @Test func missingOrInvalidAttributesAreBadRequests() async throws {
        try await Self.with { server in
            let alice = try await server.im("alice")
            for (id, request) in [
                ("nofile", Self.request("nofile", filename: nil)), ("nosize", Self.request("nosize", size: nil)),
                ("badsize", Self.request("badsize", size: "-3")), ("notnum", Self.request("notnum", size: "ten")),
                ("badtype", Self.request("badtype", type: "not a type")),
            ] {
                let reply = try await alice.query(request, id: id)
                try SchemaValidator.shared.validate(reply.xmlString())
                #expect(reply.stanzaErrorCondition == .badRequest && reply.stanzaErrorText != nil, "\(id): \(reply.xmlString())")
            }
            let set = try await alice.query(
                "<iq type='set' id='set' to='\(Self.service)'><request xmlns='\(Self.namespace)' filename='a' size='1'/></iq>", id: "set")
            #expect(set.stanzaErrorCondition == .badRequest, "\(set.xmlString())")
            let other = try await alice.query("<iq type='get' id='v' to='\(Self.service)'><query xmlns='jabber:iq:version'/></iq>", id: "v")
            #expect(other.stanzaErrorCondition == .serviceUnavailable, "\(other.xmlString())")
            let discoSet = try await alice.query(
                "<iq type='set' id='ds' to='\(Self.service)'><query xmlns='http://jabber.org/protocol/disco#info'/></iq>", id: "ds")
            #expect(discoSet.stanzaErrorCondition == .featureNotImplemented, "\(discoSet.xmlString())")
        }
    }
}
