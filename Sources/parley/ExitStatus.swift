import ParleyClient
import ParleyCore

/// The exit codes scripts rely on (documented in `parley --help`).
enum ExitStatus: Int32 {
    case ok = 0
    /// Bad arguments or configuration.
    case usage = 1
    case authenticationFailed = 2
    /// Cannot reach the server, or its certificate is not trusted.
    case connection = 3
    /// The server said no (name taken, not allowed, kicked, …).
    case refused = 4
}

/// A failure told to the user as one line, with the exit code that classifies it.
struct CLIError: Error {
    var message: String
    var status: ExitStatus

    init(_ message: String, _ status: ExitStatus) {
        self.message = message
        self.status = status
    }

    /// Turns whatever the library threw into one actionable sentence.
    init(_ error: any Error, account: JID) {
        switch error {
        case let error as CLIError:
            self = error
        case ClientError.authenticationFailed(let reason):
            self.init("authentication failed for \(account): wrong password or no such account (\(reason))", .authenticationFailed)
        case ClientError.certificateUntrusted(let reason):
            var message = "the server's certificate is not trusted: \(reason)"
            if let fingerprint = Self.fingerprint(in: reason) {
                message += ". If you are sure it is your server's, run again with --trust-fingerprint \(fingerprint)"
                    + " or put \"trusted_fingerprint\": \"\(fingerprint)\" in the config file"
            }
            self.init(message, .connection)
        case ClientError.connectionFailed(let reason):
            self.init(reason, .connection)
        case ClientError.timeout:
            self.init("the server did not answer in time", .connection)
        case ClientError.disconnected:
            self.init("the connection was lost", .connection)
        case ClientError.kicked(let reason):
            self.init("signed out: \(reason)", .refused)
        case ClientError.registrationRefused(let error):
            self.init("the server refused: \(Self.describe(error))", .refused)
        case ClientError.refused(let error):
            self.init("refused: \(Self.describe(error))", .refused)
        case ClientError.notInRoom, ClientError.invalidArgument:
            self.init("\(error)", .usage)
        case let error as StanzaError:
            self.init("the server refused: \(Self.describe(error))", .refused)
        case ClientError.fileUnavailable(let reason):
            self.init(reason, .usage)
        case ClientError.fileTooLarge, ClientError.uploadNotAllowed, ClientError.uploadQuotaExceeded, ClientError.uploadRefused,
            ClientError.noUploadService, ClientError.httpStatus, ClientError.downloadMismatch:
            self.init("\(error)", .refused)
        case let error as JIDError:
            self.init("invalid address: \(error)", .usage)
        default:
            self.init("\(error)", .connection)
        }
    }

    private static func describe(_ error: StanzaError) -> String {
        error.text.map { "\($0) (\(error.condition.rawValue))" } ?? error.condition.rawValue
    }

    /// The fingerprint the client library puts in its untrusted-certificate reasons.
    static func fingerprint(in reason: String) -> String? {
        guard let range = reason.range(of: "fingerprint ") else { return nil }
        let candidate = reason[range.upperBound...].prefix { $0.isHexDigit || $0 == ":" }
        return candidate.count >= 64 ? String(candidate) : nil
    }
}
