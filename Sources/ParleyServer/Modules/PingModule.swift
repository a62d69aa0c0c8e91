import ParleyCore

/// XEP-0199: the server answers pings addressed to it. (It also pings idle clients; that is
/// the session's job, since it owns the connection.)
public struct PingModule: ServerModule {
    public static let namespace = XMLNamespace.ping

    public init() {}

    public func register(in registry: inout ModuleRegistry) throws(ModuleRegistry.Error) {
        try registry.handle(.get, "ping", namespace: Self.namespace, for: .server) { _, responder in
            responder.result()
        }
        try registry.handle(.get, "ping", namespace: Self.namespace, for: .account, advertise: false) { request, responder in
            guard request.isToOwnAccount else { return responder.error(StanzaError(.serviceUnavailable)) }
            responder.result()
        }
    }
}
