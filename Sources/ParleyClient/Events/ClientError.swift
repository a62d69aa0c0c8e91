import Foundation
import ParleyCore

/// Why a client call failed, in words a person can act on.
public enum ClientError: Error, Sendable, Equatable, CustomStringConvertible {
    case disconnected
    case timeout
    case kicked(KickReason)
    case authenticationFailed(String)
    case certificateUntrusted(String)
    case connectionFailed(String)
    /// The server answered a request with an error (registration refused, password change
    /// not allowed, …).
    case registrationRefused(StanzaError)
    /// The server or a room said no (XEP-0045: banned, wrong password, not a moderator, …),
    /// with its stanza error condition and text.
    case refused(StanzaError)
    /// A room operation for a room we have not joined.
    case notInRoom(JID)
    /// A JID, nickname or value the call cannot use.
    case invalidArgument(String)
    /// XEP-0363: neither the server nor any of its services offers HTTP file upload.
    case noUploadService(String)
    /// The file is larger than the upload service accepts (its `max-file-size`, in bytes).
    case fileTooLarge(size: Int64, max: Int64)
    /// The upload service does not let this account upload (`not-allowed`).
    case uploadNotAllowed(String)
    /// A quota is used up (`resource-constraint`); `retryAfter` when the service said.
    case uploadQuotaExceeded(String, retryAfter: Date?)
    /// Another refusal of a slot request.
    case uploadRefused(StanzaError)
    /// An HTTP PUT or GET got this status; `reason` is the server's one-line text, if any.
    case httpStatus(Int, reason: String, url: String)
    /// The HTTP transfer itself failed (connection, TLS, timeout).
    case transferFailed(String)
    /// A local file could not be read or written.
    case fileUnavailable(String)
    /// A downloaded file is not what the message said (size or hash); it was removed.
    case downloadMismatch(String)

    public var description: String {
        switch self {
        case .disconnected: "not connected"
        case .timeout: "the server did not answer in time"
        case .kicked(let reason): "signed out: \(reason)"
        case .authenticationFailed(let reason): "authentication failed: \(reason)"
        case .certificateUntrusted(let reason): "untrusted certificate: \(reason)"
        case .connectionFailed(let reason): reason
        case .registrationRefused(let error): "the server refused: \(error)"
        case .refused(let error): "refused: " + (error.text.map { "\($0) (\(error.condition.rawValue))" } ?? error.condition.rawValue)
        case .notInRoom(let room): "you are not in the room \(room)"
        case .invalidArgument(let detail): detail
        case .noUploadService(let domain): "\(domain) offers no HTTP file upload (XEP-0363)"
        case .fileTooLarge(let size, let max):
            "the file is \(ByteCountFormat.format(size)) (\(size) bytes); the server accepts at most \(ByteCountFormat.format(max)) (\(max) bytes)"
        case .uploadNotAllowed(let reason): "the server does not allow this upload: \(reason)"
        case .uploadQuotaExceeded(let reason, let retryAfter):
            "upload quota reached: \(reason)" + (retryAfter.map { " (try again after \(ISO8601DateFormatter().string(from: $0)))" } ?? "")
        case .uploadRefused(let error): "the upload service refused: \(error)"
        case .httpStatus(let status, let reason, let url): "HTTP \(status) from \(url)" + (reason.isEmpty ? "" : ": \(reason)")
        case .transferFailed(let reason): "file transfer failed: \(reason)"
        case .fileUnavailable(let reason): reason
        case .downloadMismatch(let reason): "the downloaded file was removed: \(reason)"
        }
    }
}
