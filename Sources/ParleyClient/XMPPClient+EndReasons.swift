import Foundation
import NIOCore
import NIOPosix
import ParleyCore
import ParleyTLS

/// How a connection's end reads to the application: which stream errors are a kick (no
/// reconnecting), and network errors as one line a person can act on.
extension XMPPClient {
    /// Stream errors after which reconnecting would repeat the same refusal, or fight
    /// another device for the account (RFC 6120 §7.7.2.2; XMPPFramework learned this too).
    static func kickReason(for error: StreamError) -> KickReason? {
        switch error.condition {
        case .conflict:
            return .loggedInElsewhere
        case .notAuthorized:
            let text = error.text?.lowercased() ?? ""
            return text.contains("removed") || text.contains("deleted") ? .accountRemoved : .credentialsRevoked
        case .hostUnknown, .invalidNamespace, .unsupportedVersion, .policyViolation, .badFormat, .invalidFrom:
            return .streamError(error.condition, error.text)
        default:
            return nil
        }
    }

    /// One line a person can act on, instead of NIO's nested error dumps.
    nonisolated static func describe(_ error: any Error) -> String {
        switch error {
        case let error as IOError:
            // "connection refused", not NIO's "connection reset (error set): … (errno: 111)".
            return String(cString: strerror(error.errnoCode)).lowercased()
        case let error as NIOConnectionError:
            if error.connectionErrors.isEmpty, error.dnsAError != nil || error.dnsAAAAError != nil {
                return "unknown host \(error.host)"
            }
            if let first = error.connectionErrors.first { return describe(first.error) }
            return "unknown host \(error.host)"
        case ChannelError.connectTimeout:
            return "timed out"
        default:
            return "\(error)"
        }
    }
}

extension TLSError {
    /// Why the server's certificate is not trusted, as the user reads it; nil for a TLS
    /// failure of another kind.
    var untrustedCertificateReason: String? {
        switch self {
        case .certificateUntrusted(let reason, let fingerprint):
            "\(reason) (SHA-256 fingerprint \(fingerprint ?? "unknown"))"
        case .hostnameMismatch(let expected, let fingerprint):
            "the certificate is not for \(expected) (SHA-256 fingerprint \(fingerprint ?? "unknown"))"
        case .pinnedCertificateMismatch(_, let actual):
            "the certificate is not the trusted one (SHA-256 fingerprint \(actual ?? "unknown"))"
        default:
            nil
        }
    }
}
