import Foundation
import ParleyCore

/// XEP-0215 external service discovery (`urn:xmpp:extdisco:2`): the STUN/TURN server users
/// need for calls, with short-lived TURN credentials made as coturn's REST API checks them
/// (`use-auth-secret`): username `<expiry>:<user>`, password base64(HMAC-SHA1(secret,
/// username)). Only the server's own users may ask; they get credentials of their own.
public struct ExternalServicesModule: ServerModule {
    public static let namespace = "urn:xmpp:extdisco:2"

    struct Service: Sendable, Hashable {
        var type: String
        var transport: String
        var host: String
        var port: Int
        var restricted: Bool
    }

    let services: [Service]
    let secret: [UInt8]?
    let ttl: Duration
    let now: @Sendable () -> Date

    public init(_ turn: ServerConfiguration.TURN, now: @escaping @Sendable () -> Date = Date.init) {
        var services: [Service] = []
        if let host = turn.host {
            // coturn answers STUN on its TURN port; TURN itself only with credentials.
            services.append(Service(type: "stun", transport: "udp", host: host, port: turn.port, restricted: false))
            if turn.secret != nil {
                services.append(Service(type: "turn", transport: "udp", host: host, port: turn.port, restricted: true))
                if turn.tcp { services.append(Service(type: "turn", transport: "tcp", host: host, port: turn.port, restricted: true)) }
                if turn.tlsPort != 0 {
                    services.append(Service(type: "turns", transport: "tcp", host: host, port: turn.tlsPort, restricted: true))
                }
            }
        }
        self.services = services
        self.secret = turn.secret.map { Array($0.utf8) }
        self.ttl = turn.ttl
        self.now = now
    }

    public func register(in registry: inout ModuleRegistry) throws(ModuleRegistry.Error) {
        guard !services.isEmpty else { return }
        try registry.handle(.get, "services", namespace: Self.namespace) { request, responder in
            answerServices(request, responder)
        }
        try registry.handle(.get, "credentials", namespace: Self.namespace, advertise: false) { request, responder in
            answerCredentials(request, responder)
        }
    }

    /// §3.1 and §3.2: every service, or those of the requested `type`.
    func answerServices(_ request: IQRequest, _ responder: IQResponder) {
        guard let user = request.from.localpart, request.session != nil else {
            return responder.error(StanzaError(.forbidden, text: "External services are for this server's users."))
        }
        let type = request.payload[attribute: "type"]
        var reply = XMLElement("services", namespace: Self.namespace)
        if let type { reply[attribute: "type"] = type }
        let issued = now()
        for service in services where type == nil || service.type == type {
            reply.append(element(for: service, user: user, at: issued))
        }
        responder.result(reply)
    }

    /// §3.3: credentials for one service, named by type and host (and port, if given).
    func answerCredentials(_ request: IQRequest, _ responder: IQResponder) {
        guard let user = request.from.localpart, request.session != nil else {
            return responder.error(StanzaError(.forbidden, text: "External services are for this server's users."))
        }
        let asked = request.payload.children("service", namespace: Self.namespace)
        guard asked.count == 1, let host = asked[0][attribute: "host"], let type = asked[0][attribute: "type"] else {
            return responder.error(StanzaError(.badRequest, text: "Name one <service/> by its host and type."))
        }
        var port: Int? = nil
        if let text = asked[0][attribute: "port"] {
            guard let number = Int(text) else {
                return responder.error(StanzaError(.badRequest, text: "'\(text)' is not a port number."))
            }
            port = number
        }
        guard let service = services.first(where: { $0.host == host && $0.type == type && (port == nil || port == $0.port) }) else {
            return responder.error(StanzaError(.itemNotFound, text: "This server knows no \(type) service at \(host)."))
        }
        var reply = XMLElement("credentials", namespace: Self.namespace)
        reply.append(element(for: service, user: user, at: now()))
        return responder.result(reply)
    }

    static let expiryStep: TimeInterval = 10

    func element(for service: Service, user: String, at issued: Date) -> XMLElement {
        var element = XMLElement(
            "service",
            ["type": service.type, "transport": service.transport, "host": service.host, "port": String(service.port)])
        if service.restricted, let secret {
            // Whole seconds, so `expires` and the time in the username agree, rounded up to a
            // step of 10: requests close together get the same credentials (a client that asks
            // for all services, then for one type, can compare the answers).
            let end = (issued.timeIntervalSince1970 + Double(ttl.components.seconds)) / Self.expiryStep
            let expiry = Date(timeIntervalSince1970: end.rounded(.up) * Self.expiryStep)
            let credentials = Self.credentials(secret: secret, user: user, expiry: expiry)
            element[attribute: "restricted"] = "true"
            element[attribute: "username"] = credentials.username
            element[attribute: "password"] = credentials.password
            element[attribute: "expires"] = OfflineModule.timestamp(expiry)
        }
        return element
    }

    /// coturn's `use-auth-secret` scheme (draft-uberti-behave-turn-rest): the TURN server
    /// recomputes the password from the username and refuses it once the time in it passed.
    static func credentials(secret: [UInt8], user: String, expiry: Date) -> (username: String, password: String) {
        let username = "\(Int64(expiry.timeIntervalSince1970.rounded(.down))):\(user)"
        let mac = (try? HashFunction.sha1.hmac(key: secret, data: Array(username.utf8))) ?? []
        return (username, Data(mac).base64EncodedString())
    }
}
