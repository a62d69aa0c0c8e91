import COpenSSL

/// An OpenSSL `SSL_CTX`, fully configured in `init` and never changed afterwards. OpenSSL
/// allows concurrent `SSL_new` from one finished context, which is why sharing it across event
/// loops is sound and the class can be `@unchecked Sendable`.
public final class TLSContext: @unchecked Sendable {
    public enum Role: Sendable, Equatable {
        case server
        case client
    }

    public let role: Role
    let context: OpaquePointer
    /// Server: ALPN names in preference order, read by `ALPN.selectCallback`.
    let serverALPN: [[UInt8]]
    /// Client `.pinned` trust: the SHA-256 digest the leaf must have.
    let pinnedDigest: [UInt8]?

    public convenience init(server configuration: TLSServerConfiguration) throws {
        try self.init(
            role: .server, versions: (configuration.minimumVersion, configuration.maximumVersion),
            serverALPN: configuration.alpnProtocols.map { Array($0.utf8) }, pinnedDigest: nil)
        try loadIdentity(chain: configuration.certificateChain, key: configuration.privateKey)
        _ = try ALPN.wireFormat(configuration.alpnProtocols)  // validates the names
        if !configuration.alpnProtocols.isEmpty {
            SSL_CTX_set_alpn_select_cb(
                context, ALPN.selectCallback, Unmanaged.passUnretained(self).toOpaque())
        }
    }

    public convenience init(client configuration: TLSClientConfiguration) throws {
        var pinned: [UInt8]? = nil
        if case .pinned(let certificate) = configuration.trust {
            pinned = try Self.digest(of: certificate)
        }
        try self.init(
            role: .client, versions: (configuration.minimumVersion, configuration.maximumVersion),
            serverALPN: [],
            pinnedDigest: pinned)
        try loadTrust(configuration.trust)
        if !configuration.alpnProtocols.isEmpty {
            let wire = try ALPN.wireFormat(configuration.alpnProtocols)
            // Unlike most of OpenSSL, this one returns 0 on success.
            guard SSL_CTX_set_alpn_protos(context, wire, UInt32(wire.count)) == 0 else {
                throw TLSError.configuration("SSL_CTX_set_alpn_protos: \(OpenSSLErrorQueue.drain())")
            }
        }
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        // Our callback replaces X509_verify_cert so that we can record the leaf's fingerprint
        // for error reports and implement pinning; in CA modes it still calls X509_verify_cert.
        SSL_CTX_set_cert_verify_callback(
            context, CertificateVerifier.callback, Unmanaged.passUnretained(self).toOpaque())
    }

    private init(
        role: Role, versions: (minimum: TLSVersion, maximum: TLSVersion?), serverALPN: [[UInt8]],
        pinnedDigest: [UInt8]?
    ) throws {
        OpenSSLErrorQueue.clear()
        let method = role == .server ? TLS_server_method() : TLS_client_method()
        guard let context = SSL_CTX_new(method) else {
            throw TLSError.configuration("SSL_CTX_new: \(OpenSSLErrorQueue.drain())")
        }
        self.role = role
        self.context = context
        self.serverALPN = serverALPN
        self.pinnedDigest = pinnedDigest

        guard parley_SSL_CTX_set_min_proto_version(context, versions.minimum.openSSLValue) == 1,
            parley_SSL_CTX_set_max_proto_version(context, versions.maximum?.openSSLValue ?? 0) == 1
        else {
            throw TLSError.configuration("cannot set TLS versions: \(OpenSSLErrorQueue.drain())")
        }
        // Compression enables CRIME-style attacks; renegotiation is a DoS lever and never needed
        // by XMPP. Session tickets stay on: reconnecting mobile clients resume cheaply.
        SSL_CTX_set_options(
            context,
            PARLEY_SSL_OP_NO_COMPRESSION | PARLEY_SSL_OP_NO_RENEGOTIATION
                | PARLEY_SSL_OP_CIPHER_SERVER_PREFERENCE)
        // XMPP connections idle for hours; don't keep 34 KB of record buffers per idle one.
        _ = parley_SSL_CTX_set_mode(context, PARLEY_SSL_MODE_RELEASE_BUFFERS)
    }

    deinit {
        SSL_CTX_free(context)
    }

    private func loadIdentity(chain: PEMSource, key: PEMSource) throws {
        let certificates = try PEM.certificates(from: try chain.load())
        defer { X509_free(certificates[0]) }  // SSL_CTX_use_certificate takes its own reference
        OpenSSLErrorQueue.clear()
        guard SSL_CTX_use_certificate(context, certificates[0]) == 1 else {
            certificates.dropFirst().forEach { X509_free($0) }
            throw TLSError.configuration("certificate rejected: \(OpenSSLErrorQueue.drain())")
        }
        for (index, intermediate) in certificates.enumerated().dropFirst() {
            // add0 takes ownership on success only.
            guard parley_SSL_CTX_add0_chain_cert(context, intermediate) == 1 else {
                certificates[index...].forEach { X509_free($0) }
                throw TLSError.configuration("chain certificate rejected: \(OpenSSLErrorQueue.drain())")
            }
        }
        let privateKey = try PEM.privateKey(from: try key.load())
        defer { EVP_PKEY_free(privateKey) }
        guard SSL_CTX_use_PrivateKey(context, privateKey) == 1,
            SSL_CTX_check_private_key(context) == 1
        else {
            throw TLSError.configuration(
                "private key rejected or does not match the certificate: \(OpenSSLErrorQueue.drain())")
        }
    }

    private func loadTrust(_ trust: TLSTrust) throws {
        switch trust {
        case .systemDefault:
            OpenSSLErrorQueue.clear()
            guard SSL_CTX_set_default_verify_paths(context) == 1 else {
                throw TLSError.configuration("cannot load system CA store: \(OpenSSLErrorQueue.drain())")
            }
        case .roots(let sources):
            guard let store = SSL_CTX_get_cert_store(context) else {
                throw TLSError.configuration("SSL_CTX has no certificate store")
            }
            for source in sources {
                let certificates = try PEM.certificates(from: try source.load())
                defer { certificates.forEach { X509_free($0) } }  // the store takes references
                for certificate in certificates {
                    OpenSSLErrorQueue.clear()
                    guard X509_STORE_add_cert(store, certificate) == 1 else {
                        throw TLSError.configuration("trust root rejected: \(OpenSSLErrorQueue.drain())")
                    }
                }
            }
            // Lets an explicitly configured non-root (or self-signed leaf) act as an anchor.
            X509_VERIFY_PARAM_set_flags(SSL_CTX_get0_param(context), UInt(X509_V_FLAG_PARTIAL_CHAIN))
        case .pinned:
            break  // CertificateVerifier compares digests; no store involved.
        }
    }

    private static func digest(of pinned: PinnedCertificate) throws -> [UInt8] {
        switch pinned {
        case .sha256Fingerprint(let text):
            guard let digest = CertificateFingerprint.parse(text) else {
                throw TLSError.configuration("not a SHA-256 fingerprint: \(text)")
            }
            return digest
        case .certificate(let source):
            let certificates = try PEM.certificates(from: try source.load())
            defer { certificates.forEach { X509_free($0) } }
            return try CertificateFingerprint.digest(of: certificates[0])
        }
    }
}
