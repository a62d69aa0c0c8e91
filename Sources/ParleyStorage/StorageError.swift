/// The failures a caller is expected to handle. Anything else a backend throws (I/O, a corrupt
/// file, a lost connection) is an internal error the caller logs and reports as such.
public enum StorageError: Error, Sendable, Hashable, CustomStringConvertible {
    /// `createAccount` for a username that is taken.
    case accountExists(username: String)
    /// A write (a password change, a roster change, an offline message, …) for a username that
    /// does not exist (any more: an admin may just have deleted it).
    case accountNotFound(username: String)
    /// The caller passed something storage refuses to write, e.g. two keys for one hash.
    case invalidArgument(String)
    /// The database cannot be opened or used at all: not creatable, or from a newer version.
    case unusableDatabase(String)
    /// `storeOffline` for a user who already has `limit` offline messages.
    case quotaExceeded(limit: Int)
    /// A reference to an item that does not exist, such as an unknown archive id (XEP-0313).
    case itemNotFound(String)

    public var description: String {
        switch self {
        case .accountExists(let username): "account '\(username)' already exists"
        case .accountNotFound(let username): "account '\(username)' does not exist"
        case .invalidArgument(let reason): "invalid argument: \(reason)"
        case .unusableDatabase(let reason): reason
        case .quotaExceeded(let limit): "offline storage is full (\(limit) messages)"
        case .itemNotFound(let what): "no such item: \(what)"
        }
    }
}
