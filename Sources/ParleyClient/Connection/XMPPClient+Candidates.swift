extension XMPPClient {
    /// Where to connect, in order: the configured host, else the domain's SRV records
    /// (RFC 6120 §3.2.1; `_xmpps-client` for direct TLS, XEP-0368), else the domain itself
    /// on the default port (§3.2.2).
    ///
    /// Over a WebSocket: the configured endpoint, else the one the domain's XEP-0156 host-meta
    /// lists (throws when there is none).
    static func candidates(for configuration: ClientConfiguration) async throws -> [ClientConfiguration] {
        if configuration.webSocket == .discover {
            var candidate = configuration
            let url = try await HostMetaLookup.webSocketEndpoint(
                domain: configuration.jid.domainpart, base: configuration.hostMetaBase,
                trustedCertificateFile: configuration.httpTrustedCertificateFile)
            candidate.webSocket = .endpoint(url)
            return [candidate]
        }
        if configuration.host != nil || configuration.webSocket != nil { return [configuration] }
        let service = configuration.security == .directTLS ? "_xmpps-client._tcp" : "_xmpp-client._tcp"
        var candidates: [ClientConfiguration] = []
        for record in await SRVResolver.lookup(service: service, domain: configuration.jid.domainpart) {
            var candidate = configuration
            candidate.host = record.target.hasSuffix(".") ? String(record.target.dropLast()) : record.target
            candidate.port = Int(record.port)
            candidates.append(candidate)
        }
        candidates.append(configuration)
        return candidates
    }
}
