import Hummingbird
import NIOCore

/// The request context every ParleyHTTP route runs in: Hummingbird's basic one, plus where the
/// request came from (BOSH decides by it whether a session is confidential, as WebSocket does)
/// and the connection's event loop (a new BOSH session lives on it).
public struct HTTPContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?
    public let eventLoop: any EventLoop

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        eventLoop = source.channel.eventLoop
    }
}

/// One thing served over HTTP (uploads, /health, later WebSocket, BOSH, host-meta, /metrics):
/// it adds its own routes, so adding a feature never touches another one's code.
public protocol HTTPFeature: Sendable {
    func mount(on router: Router<HTTPContext>)
}

/// `GET /health`: 200 while the process serves HTTP, for load balancers and probes.
public struct HealthFeature: HTTPFeature {
    public init() {}

    public func mount(on router: Router<HTTPContext>) {
        router.get("/health") { _, _ in "ok\n" }
    }
}
