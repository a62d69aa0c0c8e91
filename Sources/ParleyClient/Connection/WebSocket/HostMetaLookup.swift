import AsyncHTTPClient
import Foundation
import NIOCore
import NIOSSL
import ParleyCore

/// XEP-0156: where a domain says its XMPP-over-WebSocket endpoint is, read from
/// `https://<domain>/.well-known/host-meta.json` (JRD), else from `host-meta` (XRD).
/// Only over HTTPS: an answer anyone on the path could forge would send the client, and its
/// credentials, wherever they liked (XEP-0156 §5).
enum HostMetaLookup {
    static let webSocketRelation = "urn:xmpp:alt-connections:websocket"
    /// A host-meta document is a few hundred bytes; more is not one.
    static let maxDocumentBytes = 64 * 1024

    /// Why no endpoint came out of the lookup.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The first `wss://` (or, on loopback, `ws://`) endpoint listed. `base` replaces
    /// `https://<domain>` (a test server, a host-meta served on another port).
    static func webSocketEndpoint(domain: String, base: String?, trustedCertificateFile: String?) async throws -> WebSocketURL {
        var root = base ?? "https://\(domain)"
        while root.hasSuffix("/") { root.removeLast() }
        guard root.lowercased().hasPrefix("https://") else {
            throw Failure(description: "host-meta is read over HTTPS only (XEP-0156 §5), not from \(root)")
        }
        var reasons: [String] = []
        for (path, parse) in [("/.well-known/host-meta.json", links(json:)), ("/.well-known/host-meta", links(xrd:))] {
            let url = root + path
            do {
                let body = try await fetch(url, trustedCertificateFile: trustedCertificateFile)
                let endpoints = parse(body).compactMap(WebSocketURL.init)
                if let usable = endpoints.first(where: { $0.isSecure || $0.isLoopback }) { return usable }
                reasons.append("\(url) lists no wss:// endpoint")
            } catch let failure as Failure {
                reasons.append(failure.description)
            } catch {
                reasons.append("\(url): \(XMPPClient.describe(error))")
            }
        }
        throw Failure(description: "no XMPP WebSocket endpoint found for \(domain) (\(reasons.joined(separator: "; ")))")
    }

    private static func fetch(_ url: String, trustedCertificateFile: String?) async throws -> [UInt8] {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Accept", value: url.hasSuffix(".json") ? "application/json" : "application/xrd+xml")
        request.tlsConfiguration = HTTPTransfer.tlsConfiguration(alsoTrusting: trustedCertificateFile)
        // A refused connection fails at once instead of being retried until the deadline.
        let response = try await HTTPTransfer.client.execute(request, timeout: .seconds(10))
        guard response.status == .ok else { throw Failure(description: "\(url) answered HTTP \(response.status.code)") }
        let body = try await response.body.collect(upTo: maxDocumentBytes)
        return Array(body.readableBytesView)
    }

    /// JRD (RFC 6415 §A): `{"links": [{"rel": …, "href": …}]}`.
    static func links(json body: [UInt8]) -> [String] {
        guard let document = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            let links = document["links"] as? [[String: Any]]
        else { return [] }
        return links.compactMap { link in
            link["rel"] as? String == webSocketRelation ? link["href"] as? String : nil
        }
    }

    /// XRD: `<Link rel=… href=…/>` children of the root, read with the stream parser (no DTD,
    /// no entities) as every other piece of XML from the network: the document goes inside a
    /// stream root that is never sent, so its root element is the stream's first "stanza".
    static func links(xrd body: [UInt8]) -> [String] {
        var bytes = body[...]
        // The declaration may not appear inside the parser's running stream.
        if bytes.starts(with: Array("<?xml".utf8)), let end = bytes.indices.first(where: { bytes[$0] == UInt8(ascii: ">") }) {
            bytes = bytes[(end + 1)...]
        }
        let parser = XMLStreamParser(limits: XMLStreamParser.Limits(maxStanzaBytes: maxDocumentBytes))
        let root = Array("<stream:stream xmlns='\(XMLNamespace.client)' xmlns:stream='\(XMLNamespace.streams)'>".utf8)
        guard let events = try? parser.feed(root + Array(bytes)) else { return [] }
        return events.flatMap { event -> [String] in
            guard case .stanza(let document) = event, document.name == "XRD" else { return [] }
            return document.elements.compactMap { link in
                link.name == "Link" && link[attribute: "rel"] == webSocketRelation ? link[attribute: "href"] : nil
            }
        }
    }
}
