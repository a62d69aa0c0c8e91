import ParleyCore

/// Why a profile, bookmark or last-activity call failed.
public enum ProfileError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The server (or the contact's server) said no: not allowed, not found, not supported.
    case refused(StanzaError)
    /// The answer was not what the XEP says it is.
    case malformedAnswer(String)
    /// Not an image this client can describe (PNG, JPEG, GIF or WebP).
    case unsupportedImage
    case avatarTooLarge(bytes: Int, limit: Int)
    /// The avatar's bytes do not hash to the id they were published under.
    case hashMismatch(expected: String, actual: String)
    case invalidArgument(String)

    public var description: String {
        switch self {
        case .refused(let error):
            let text = error.text.map { "\($0) (\(error.condition.rawValue))" } ?? error.condition.rawValue
            return "the server refused: \(text)"
        case .malformedAnswer(let detail): return "the server's answer makes no sense: \(detail)"
        case .unsupportedImage: return "not a PNG, JPEG, GIF or WebP image"
        case .avatarTooLarge(let bytes, let limit): return "the image has \(bytes) bytes; avatars may have at most \(limit)"
        case .hashMismatch(let expected, let actual): return "the avatar's bytes hash to \(actual), not to its id \(expected)"
        case .invalidArgument(let detail): return detail
        }
    }
}
