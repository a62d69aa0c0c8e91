/// Everything that can go wrong in ParleyTLS, typed so that callers (stream layer, CLI, logs)
/// can tell an operator *why* a connection was refused instead of "handshake failed".
public enum TLSError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Building a context failed: unreadable PEM, key not matching the certificate, bad ALPN list.
    case configuration(String)
    /// The handshake failed for a reason other than certificate trust (protocol version, cipher,
    /// alert from the peer). `reason` is OpenSSL's error string.
    case handshakeFailed(reason: String)
    /// The peer's chain does not lead to a trusted root. `reason` is OpenSSL's verify result
    /// string; `fingerprint` lets a user decide to pin a self-signed development server.
    case certificateUntrusted(reason: String, fingerprint: String?)
    /// The chain is trusted but names another host.
    case hostnameMismatch(expected: String, fingerprint: String?)
    /// Pinned mode: the leaf certificate is not the pinned one.
    case pinnedCertificateMismatch(expected: String, actual: String?)
    /// The transport closed without a close_notify: the data may have been truncated.
    case unexpectedEOF
    /// A TLS-level failure after the handshake (bad record MAC, unexpected message...).
    case protocolError(reason: String)
    /// A write or operation arrived after the TLS session was closed or failed.
    case closed
    /// RFC 9266 `tls-exporter` is only safe with TLS 1.3 or TLS 1.2 + extended master secret.
    case channelBindingUnavailable(String)

    public var description: String {
        switch self {
        case .configuration(let reason):
            return "TLS configuration error: \(reason)"
        case .handshakeFailed(let reason):
            return "TLS handshake failed: \(reason)"
        case .certificateUntrusted(let reason, let fingerprint):
            return "untrusted certificate (\(reason)); SHA-256 fingerprint \(fingerprint ?? "unknown")"
        case .hostnameMismatch(let expected, let fingerprint):
            return "certificate is not valid for \(expected); SHA-256 fingerprint \(fingerprint ?? "unknown")"
        case .pinnedCertificateMismatch(let expected, let actual):
            return "certificate \(actual ?? "unknown") is not the pinned certificate \(expected)"
        case .unexpectedEOF:
            return "connection closed without TLS close_notify (possible truncation)"
        case .protocolError(let reason):
            return "TLS protocol error: \(reason)"
        case .closed:
            return "TLS session is closed"
        case .channelBindingUnavailable(let reason):
            return "tls-exporter channel binding unavailable: \(reason)"
        }
    }
}
