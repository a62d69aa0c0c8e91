import HTTPTypes
import Hummingbird
import NIOCore

/// The web chat parleyd ships (`webchat.path`, `/chat/` by default): a few static files, an XMPP
/// client in plain JavaScript that logs in over this server's WebSocket endpoint.
///
/// The page holds a password and talks to the user's account, so it is served with a CSP that
/// lets it run only its own scripts and connect only to this server's WebSocket and upload URLs.
public struct WebChatFeature: HTTPFeature {
    let path: String
    /// Read at each request: with `http.port: 0` both are known only once the listener is bound.
    let webSocketURL: @Sendable () -> String
    let uploadBaseURL: @Sendable () -> String?

    public init(path: String, webSocketURL: @escaping @Sendable () -> String, uploadBaseURL: @escaping @Sendable () -> String?) {
        self.path = path
        self.webSocketURL = webSocketURL
        self.uploadBaseURL = uploadBaseURL
    }

    public func mount(on router: Router<HTTPContext>) {
        // The router ignores a trailing slash, so `/chat` and `/chat/` both come here; the page's
        // relative links need the slash.
        router.get(RouterPath(path)) { request, _ in index(request, head: false) }
        router.head(RouterPath(path)) { request, _ in index(request, head: true) }
        router.get(RouterPath("\(path)/:file")) { request, context in file(request, context.parameters.get("file"), head: false) }
        router.head(RouterPath("\(path)/:file")) { request, context in file(request, context.parameters.get("file"), head: true) }
    }

    private func index(_ request: Request, head: Bool) -> Response {
        guard request.uri.path.hasSuffix("/") else {
            return Response(status: .permanentRedirect, headers: [.location: path + "/", .contentLength: "0"])
        }
        return file(request, "index.html", head: head)
    }

    private func file(_ request: Request, _ name: String?, head: Bool) -> Response {
        guard let name, let file = WebChatFiles.all[name] else {
            return Response(
                status: .notFound, headers: [.contentType: "text/plain; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: "No such file in the web chat\n")))
        }
        var headers: HTTPFields = [
            .contentType: file.contentType,
            .eTag: file.etag,
            // Revalidated at every load (a 304 is cheap): the names carry no version, and an
            // upgraded server must not run a stale script against its new self.
            .cacheControl: "no-cache",
            .contentSecurityPolicy: contentSecurityPolicy(),
            .xContentTypeOptions: "nosniff",
            HTTPField.Name("Referrer-Policy")!: "no-referrer",
            HTTPField.Name("X-Frame-Options")!: "DENY",
        ]
        if let match = request.headers[.ifNoneMatch], match == file.etag || match == "*" {
            return Response(status: .notModified, headers: headers)
        }
        headers[.contentLength] = String(file.bytes.count)
        if head { return Response(status: .ok, headers: headers) }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: file.bytes)))
    }

    /// Own scripts and styles only (no inline code, no eval); network access only to this
    /// origin (host-meta), the WebSocket endpoint and the upload service; images also from
    /// data: (vCard avatars) and blob: (a file about to be sent); never framed.
    func contentSecurityPolicy() -> String {
        let upload = uploadBaseURL().map(Self.origin)
        let connect = ["'self'", Self.origin(webSocketURL()), upload].compactMap { $0 }
        let images = ["'self'", "data:", "blob:", upload].compactMap { $0 }
        return "default-src 'none'; script-src 'self'; style-src 'self'; img-src \(images.joined(separator: " ")); "
            + "connect-src \(connect.joined(separator: " ")); base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    }

    /// `wss://host:port/path` → `wss://host:port`.
    static func origin(_ url: String) -> String {
        guard let scheme = url.range(of: "://") else { return url }
        let rest = url[scheme.upperBound...]
        return String(url[..<scheme.upperBound]) + String(rest.prefix { $0 != "/" && $0 != "?" })
    }
}
