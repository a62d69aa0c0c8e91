import Hummingbird

/// The request context every ParleyHTTP route runs in.
public typealias HTTPContext = BasicRequestContext

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
