/// What a server stores for one account and one SCRAM hash instead of the password
/// (RFC 5802 §3): enough to verify a client's proof and to prove itself to the client, but not
/// enough to log in as the user (that needs ClientKey, which only the password yields).
public struct SCRAMCredentials: Sendable, Hashable {
    /// RFC 7677 §4 and RFC 5802 §5.1 ask for at least 4096 iterations.
    public static let minimumIterations = 4096
    public static let defaultSaltLength = 16

    public var hash: HashFunction
    public var salt: [UInt8]
    public var iterations: Int
    /// H(ClientKey).
    public var storedKey: [UInt8]
    /// HMAC(SaltedPassword, "Server Key").
    public var serverKey: [UInt8]

    public init(hash: HashFunction, salt: [UInt8], iterations: Int, storedKey: [UInt8], serverKey: [UInt8]) {
        self.hash = hash
        self.salt = salt
        self.iterations = iterations
        self.storedKey = storedKey
        self.serverKey = serverKey
    }

    /// Derives the stored form of `password`, preparing it with SASLprep first. A nil or empty
    /// `salt` draws a fresh random one. Runs PBKDF2: call it off the event loop (account creation,
    /// password change), never per login.
    public static func derive(
        password: String, salt: [UInt8]? = nil, iterations: Int = minimumIterations, hash: HashFunction
    ) throws(SCRAMCredentialsError) -> SCRAMCredentials {
        guard iterations >= minimumIterations else { throw .iterationCountTooLow(iterations) }
        let prepared: String
        do throws(SASLprep.Error) {
            prepared = try SASLprep.prepare(password)
        } catch {
            throw .invalidPassword(error)
        }
        do throws(CryptoError) {
            var salt = salt ?? []
            if salt.isEmpty { salt = try SecureRandom.bytes(defaultSaltLength) }
            let keys = try SCRAMKeys(preparedPassword: prepared, salt: salt, iterations: iterations, hash: hash)
            return SCRAMCredentials(
                hash: hash, salt: salt, iterations: iterations, storedKey: keys.storedKey,
                serverKey: keys.serverKey)
        } catch {
            throw .crypto(error)
        }
    }

    /// Stand-in credentials for a username that has no account, so that the SCRAM exchange
    /// runs exactly as for a real one and an attacker cannot enumerate accounts (RFC 5802 §9,
    /// RFC 7677 §4). Everything is derived from `serverSecret` (a long-lived random value kept
    /// by the server) and the username: asking twice for the same name yields the same salt,
    /// as it would for a real account. Give `iterations` the value real accounts are created
    /// with. No password matches the keys, and `SCRAMServer` fails such exchanges regardless.
    public static func unknownUser(
        username: String, serverSecret: [UInt8], iterations: Int = minimumIterations, hash: HashFunction
    ) throws(CryptoError) -> SCRAMCredentials {
        func derived(_ label: String, length: Int) throws(CryptoError) -> [UInt8] {
            // The hash name is part of the label so SHA-1 and SHA-256 stand-ins look unrelated,
            // as two independently salted real credentials would.
            let data = Array("parley-scram-\(label)-\(hash.rawValue)\u{0}\(username)".utf8)
            return Array(try HashFunction.sha256.hmac(key: serverSecret, data: data).prefix(length))
        }
        return SCRAMCredentials(
            hash: hash, salt: try derived("salt", length: defaultSaltLength), iterations: iterations,
            storedKey: try derived("stored-key", length: hash.digestSize),
            serverKey: try derived("server-key", length: hash.digestSize))
    }
}

public enum SCRAMCredentialsError: Error, Sendable, Hashable {
    case iterationCountTooLow(Int)
    case invalidPassword(SASLprep.Error)
    case crypto(CryptoError)
}

/// The key schedule of RFC 5802 §3, shared by the client, PLAIN verification and `derive`.
struct SCRAMKeys {
    var saltedPassword: [UInt8]
    var clientKey: [UInt8]
    var storedKey: [UInt8]
    var serverKey: [UInt8]

    init(preparedPassword: String, salt: [UInt8], iterations: Int, hash: HashFunction) throws(CryptoError) {
        saltedPassword = try hash.pbkdf2(password: Array(preparedPassword.utf8), salt: salt, iterations: iterations)
        clientKey = try hash.hmac(key: saltedPassword, data: Array("Client Key".utf8))
        storedKey = try hash.digest(clientKey)
        serverKey = try hash.hmac(key: saltedPassword, data: Array("Server Key".utf8))
    }
}
