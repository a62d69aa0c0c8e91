import HTTPTypes
import Hummingbird
import NIOConcurrencyHelpers
import NIOCore

/// XEP-0156: `/.well-known/host-meta` (XRD) and `/.well-known/host-meta.json` (JRD) name the
/// server's WebSocket and BOSH endpoints, so that a web client given only a JID finds where to
/// connect.
/// Browsers read them from other origins (the web client's), hence the CORS headers.
public final class HostMetaFeature: HTTPFeature {
    static let webSocketRelation = "urn:xmpp:alt-connections:websocket"
    static let boshRelation = "urn:xmpp:alt-connections:xbosh"
    static let xrdNamespace = "http://docs.oasis-open.org/ns/xri/xrd-1.0"

    /// `wss://example.org:5281/xmpp-websocket`; with port 0 it is known only once bound.
    /// Empty when WebSocket is off.
    private let webSocketURL: NIOLockedValueBox<String>
    /// `https://example.org:5281/http-bind`; empty when BOSH is off.
    private let boshURLBox: NIOLockedValueBox<String>

    public init(webSocketURL: String, boshURL: String = "") {
        self.webSocketURL = NIOLockedValueBox(webSocketURL)
        boshURLBox = NIOLockedValueBox(boshURL)
    }

    public var url: String {
        get { webSocketURL.withLockedValue { $0 } }
        set { webSocketURL.withLockedValue { $0 = newValue } }
    }

    public var boshURL: String {
        get { boshURLBox.withLockedValue { $0 } }
        set { boshURLBox.withLockedValue { $0 = newValue } }
    }

    /// Relation and address of each endpoint on offer, WebSocket first (XEP-0156 §3).
    private var links: [(rel: String, href: String)] {
        [(Self.webSocketRelation, url), (Self.boshRelation, boshURL)].filter { !$0.href.isEmpty }
    }

    /// The WebSocket URL for an HTTP base URL (`https://host:port` → `wss://host:port/path`).
    public static func webSocketURL(httpBase: String, path: String) -> String {
        var base = httpBase
        while base.hasSuffix("/") { base.removeLast() }
        if base.hasPrefix("https://") {
            base = "wss://" + base.dropFirst("https://".count)
        } else if base.hasPrefix("http://") {
            base = "ws://" + base.dropFirst("http://".count)
        }
        return base + path
    }

    public func mount(on router: Router<HTTPContext>) {
        router.get("/.well-known/host-meta") { [self] _, _ in
            Self.response(xrd(), contentType: "application/xrd+xml; charset=utf-8")
        }
        router.get("/.well-known/host-meta.json") { [self] _, _ in
            Self.response(jrd(), contentType: "application/json")
        }
        for path in ["/.well-known/host-meta", "/.well-known/host-meta.json"] {
            router.on(RouterPath(path), method: .options) { _, _ in
                Response(status: .noContent, headers: Self.corsHeaders)
            }
        }
    }

    func xrd() -> String {
        "<?xml version='1.0' encoding='utf-8'?>\n<XRD xmlns='\(Self.xrdNamespace)'>\n"
            + links.map { "  <Link rel='\($0.rel)' href='\(Self.escapeXML($0.href))'/>\n" }.joined() + "</XRD>\n"
    }

    func jrd() -> String {
        "{\"links\":[" + links.map { "{\"rel\":\"\($0.rel)\",\"href\":\"\(Self.escapeJSON($0.href))\"}" }.joined(separator: ",") + "]}\n"
    }

    /// Any page may read where to connect (Prosody's defaults for its HTTP modules).
    static let corsHeaders: HTTPFields = [
        .accessControlAllowOrigin: "*",
        .accessControlAllowMethods: "GET, OPTIONS",
        .accessControlAllowHeaders: "Content-Type",
        .accessControlMaxAge: "7200",
    ]

    private static func response(_ body: String, contentType: String) -> Response {
        var headers = corsHeaders
        headers[.contentType] = contentType
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: body)))
    }

    private static func escapeXML(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "'", with: "&apos;")
            .replacingOccurrences(of: "<", with: "&lt;")
    }

    private static func escapeJSON(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
    }
}
