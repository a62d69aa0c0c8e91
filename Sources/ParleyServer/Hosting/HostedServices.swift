import ParleyCore
import ParleyStorage

/// The hosted services of this server, by domain. Fixed at start-up, so the router's look-up
/// for a stanza to another domain is one dictionary read without a lock.
public final class HostedServices: Sendable {
    private let byDomain: [String: any HostedService]

    /// Fails if two services claim one domain, or one claims the accounts' domain.
    public init(_ services: [any HostedService], serverDomain: JID, events: ServerEventBus) throws {
        var byDomain: [String: any HostedService] = [:]
        for service in services {
            let domain = try JID(service.domain)
            guard domain.isDomain, domain.domainpart != serverDomain.domainpart, byDomain[domain.domainpart] == nil else {
                throw ConfigurationError(
                    key: service.domain, reason: "a hosted service needs a domain of its own, not taken by the accounts or another service")
            }
            byDomain[domain.domainpart] = service
        }
        self.byDomain = byDomain
        guard !byDomain.isEmpty else { return }
        let all = Array(byDomain.values)
        events.subscribe { event in
            guard case .sessionEnded(let session) = event else { return }
            for service in all { service.sessionEnded(session.jid) }
        }
    }

    /// No hosted service: every other domain is remote.
    public init() {
        byDomain = [:]
    }

    public func service(for domainpart: String) -> (any HostedService)? {
        byDomain.isEmpty ? nil : byDomain[domainpart]
    }

    var all: [any HostedService] { byDomain.values.sorted { $0.domain < $1.domain } }

    /// What disco#items of the server lists (XEP-0030 §4).
    var discoItems: [XMLElement] {
        all.map { XMLElement("item", ["jid": $0.domain, "name": $0.name]) }
    }

    func start(router: StanzaRouter, storage: any ServerStorage) async throws {
        for (domain, service) in byDomain {
            try await service.start(HostedServiceOutlet(domain: domain, router: router, storage: storage))
        }
    }
}
