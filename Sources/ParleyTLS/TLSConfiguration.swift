import COpenSSL

/// Where PEM material comes from. Files are read when the context is built, so a server can
/// be pointed at paths that a certificate renewal job replaces (rebuild the context to reload).
public enum PEMSource: Sendable, Equatable {
    case file(String)
    case pem(String)

    func load() throws -> String {
        switch self {
        case .file(let path): return try PEM.readFile(path)
        case .pem(let text): return text
        }
    }
}

/// How a client decides to trust the server's certificate.
public enum TLSTrust: Sendable, Equatable {
    /// The system CA store (Debian: /etc/ssl/certs) plus a hostname check.
    case systemDefault
    /// Only these PEM CA certificates (a private CA, or tests) plus a hostname check.
    /// A listed certificate is a trust anchor even if it is not self-signed or not a CA.
    case roots([PEMSource])
    /// Development servers with a self-signed certificate: no chain and no hostname check;
    /// the leaf must be exactly this certificate. The pin is stronger than any name check.
    case pinned(PinnedCertificate)
}

/// The one certificate a `.pinned` client accepts.
public enum PinnedCertificate: Sendable, Equatable {
    case certificate(PEMSource)
    /// SHA-256 fingerprint, as `CertificateFingerprint` formats it (colons and case optional).
    case sha256Fingerprint(String)
}

/// A server context: certificate chain, key, and the ALPN protocols it is willing to select.
public struct TLSServerConfiguration: Sendable {
    /// Leaf first, then intermediates, in one PEM.
    public var certificateChain: PEMSource
    public var privateKey: PEMSource
    /// In preference order. XEP-0368 direct TLS uses `xmpp-client`; clients that offer no ALPN,
    /// or none of these, still connect (no protocol is selected) since many XMPP clients
    /// send none at all.
    public var alpnProtocols: [String]
    /// TLS 1.2 is the floor (RFC 9325); TLS 1.3 is preferred when both sides have it.
    public var minimumVersion: TLSVersion
    /// nil: the newest OpenSSL supports. Capping exists for tests and interop debugging.
    public var maximumVersion: TLSVersion?

    public init(
        certificateChain: PEMSource, privateKey: PEMSource,
        alpnProtocols: [String] = ["xmpp-client"], minimumVersion: TLSVersion = .tls12,
        maximumVersion: TLSVersion? = nil
    ) {
        self.certificateChain = certificateChain
        self.privateKey = privateKey
        self.alpnProtocols = alpnProtocols
        self.minimumVersion = minimumVersion
        self.maximumVersion = maximumVersion
    }
}

/// A client context. The server name to verify and to send as SNI is per connection and is
/// given to `TLSHandler`, so one context serves every connection of a process.
public struct TLSClientConfiguration: Sendable {
    public var trust: TLSTrust
    /// Offered in this order; empty means no ALPN extension (STARTTLS does not use ALPN).
    public var alpnProtocols: [String]
    public var minimumVersion: TLSVersion
    /// nil: the newest OpenSSL supports. Capping exists for tests and interop debugging.
    public var maximumVersion: TLSVersion?

    public init(
        trust: TLSTrust = .systemDefault, alpnProtocols: [String] = [],
        minimumVersion: TLSVersion = .tls12, maximumVersion: TLSVersion? = nil
    ) {
        self.trust = trust
        self.alpnProtocols = alpnProtocols
        self.minimumVersion = minimumVersion
        self.maximumVersion = maximumVersion
    }
}

public enum TLSVersion: Sendable, Equatable {
    case tls12
    case tls13

    var openSSLValue: Int32 {
        switch self {
        case .tls12: return TLS1_2_VERSION
        case .tls13: return TLS1_3_VERSION
        }
    }
}
