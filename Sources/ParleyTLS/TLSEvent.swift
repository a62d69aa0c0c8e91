/// User inbound events fired by `TLSHandler`.
public enum TLSEvent: Sendable, Equatable {
    /// The handshake finished; writes buffered during it have already been sent.
    case handshakeCompleted(TLSHandshakeInfo)
}

/// What was negotiated, for logging, the XEP-0368 port (ALPN) and SCRAM-*-PLUS (exporter).
public struct TLSHandshakeInfo: Sendable, Equatable {
    public var negotiatedALPN: String?
    /// SHA-256 of the peer's leaf certificate (nil on a server: clients send none).
    public var peerCertificateFingerprint: String?
    /// "TLSv1.3" or "TLSv1.2".
    public var protocolVersion: String
    public var cipherSuite: String
    /// RFC 9266 `tls-exporter` value, nil when the session cannot provide a safe one.
    public var tlsExporter: [UInt8]?

    public init(
        negotiatedALPN: String?, peerCertificateFingerprint: String?, protocolVersion: String,
        cipherSuite: String, tlsExporter: [UInt8]?
    ) {
        self.negotiatedALPN = negotiatedALPN
        self.peerCertificateFingerprint = peerCertificateFingerprint
        self.protocolVersion = protocolVersion
        self.cipherSuite = cipherSuite
        self.tlsExporter = tlsExporter
    }
}
