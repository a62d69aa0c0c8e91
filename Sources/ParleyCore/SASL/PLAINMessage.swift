/// The message of the PLAIN mechanism (RFC 4616): `[authzid] NUL authcid NUL passwd`.
/// Servers must only offer PLAIN over TLS; that policy lives in the session, not here.
public struct PLAINMessage: Sendable, Hashable {
    /// RFC 4616 §2 requires accepting at least 255 octets per field; longer input than this is
    /// not a credential, only work for the server.
    public static let maximumFieldLength = 1024

    public var authzid: String?
    public var authcid: String
    public var password: String

    public init(authzid: String? = nil, authcid: String, password: String) {
        self.authzid = authzid
        self.authcid = authcid
        self.password = password
    }

    /// Parses the client's message. Every field must be UTF-8 without NUL (the separator) and
    /// within `maximumFieldLength`; authcid and password must be non-empty (`1*SAFE`); an
    /// empty authzid means "none".
    public init(parsing message: [UInt8]) throws(SASLFailure) {
        let fields = message.split(separator: 0, omittingEmptySubsequences: false)
        guard fields.count == 3 else { throw .malformedRequest("PLAIN needs exactly two NUL separators") }
        var strings: [String] = []
        for field in fields {
            guard field.count <= Self.maximumFieldLength else { throw .malformedRequest("PLAIN field too long") }
            guard let string = String(validating: field, as: UTF8.self) else {
                throw .malformedRequest("PLAIN field is not valid UTF-8")
            }
            strings.append(string)
        }
        guard !strings[1].isEmpty else { throw .malformedRequest("empty authentication identity") }
        guard !strings[2].isEmpty else { throw .malformedRequest("empty password") }
        self.init(authzid: strings[0].isEmpty ? nil : strings[0], authcid: strings[1], password: strings[2])
    }

    /// The client's initial response. Throws `malformed-request` for what a server would reject
    /// anyway (NUL inside a field, an empty authcid or password, an empty authzid string).
    public func encoded() throws(SASLFailure) -> [UInt8] {
        for field in [authzid ?? "x", authcid, password] {
            guard !field.isEmpty, !field.utf8.contains(0), field.utf8.count <= Self.maximumFieldLength else {
                throw .malformedRequest("invalid PLAIN field")
            }
        }
        return Array((authzid ?? "").utf8) + [0] + Array(authcid.utf8) + [0] + Array(password.utf8)
    }

    /// Checks the password against stored SCRAM credentials: SASLprep, PBKDF2 with the stored
    /// salt and iteration count, then StoredKey compared in constant time. Runs PBKDF2, so call
    /// it off the event loop. For a username without an account, verify against
    /// `SCRAMCredentials.unknownUser(…)` so both paths cost the same, and fail regardless.
    public func verify(against credentials: SCRAMCredentials) throws(SASLFailure) {
        // A password SASLprep rejects cannot have been stored, so it is simply wrong.
        guard let prepared = try? SASLprep.prepare(password) else { throw .notAuthorized() }
        let keys: SCRAMKeys
        do throws(CryptoError) {
            keys = try SCRAMKeys(
                preparedPassword: prepared, salt: credentials.salt, iterations: credentials.iterations,
                hash: credentials.hash)
        } catch {
            throw SASLFailure(.temporaryAuthFailure)
        }
        guard ConstantTime.equals(keys.storedKey, credentials.storedKey) else { throw .notAuthorized() }
    }
}
