/// Why a configuration was refused: the key (or file) at fault and the reason, in one line
/// an operator can act on, e.g. `c2s.prot: unknown option (did you mean c2s.port?)`.
public struct ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The option's dotted key (`limits.max_stanza_bytes`), an environment variable, or the
    /// configuration file's path when the file as a whole is at fault.
    public var key: String
    public var reason: String

    public init(key: String, reason: String) {
        self.key = key
        self.reason = reason
    }

    public var description: String { "\(key): \(reason)" }
}
