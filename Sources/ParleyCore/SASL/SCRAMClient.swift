/// The client side of SCRAM-SHA-1 / SCRAM-SHA-256 (RFC 5802, RFC 7677) without channel
/// binding: `clientFirst()` → send; `receiveServerFirst(_:)` → send the returned client-final;
/// `receiveServerFinal(_:)` checks the server's signature. Only after that last step succeeds
/// has the server proven it knows the credentials; a `<success/>` without it must be treated as
/// a failure.
///
/// `receiveServerFirst` runs PBKDF2 with the server's iteration count: call it off the event loop.
public struct SCRAMClient: Sendable {
    public let hash: HashFunction
    public let username: String
    public let authzid: String?
    /// Iteration counts the client will compute. RFC 7677 asks servers for at least 4096, but
    /// older servers may use fewer, so the default only guards against a hostile server making
    /// the client burn CPU; a stricter client can raise the lower bound.
    public let acceptedIterations: ClosedRange<Int>
    /// The count the server asked for, once server-first has arrived, for logging or policy.
    public private(set) var serverIterations: Int?
    /// The salt the server sent, so a client may cache the derived keys for this account.
    public private(set) var serverSalt: [UInt8]?

    private let password: String
    private let nonceGenerator: SCRAMNonce.Generator
    private var state: State = .initial

    private enum State: Sendable {
        case initial
        case awaitingServerFirst(gs2Header: String, bare: String, clientNonce: String, preparedPassword: String)
        case awaitingServerFinal(expectedServerSignature: [UInt8])
        case authenticated
        case failed
    }

    /// `username` goes on the wire as given (XMPP callers pass the JID localpart, already
    /// normalized); `password` is SASLprep'd before use, as RFC 5802 §5.1 requires.
    public init(
        hash: HashFunction, username: String, password: String, authzid: String? = nil,
        acceptedIterations: ClosedRange<Int> = 1...1_000_000,
        nonceGenerator: @escaping SCRAMNonce.Generator = SCRAMNonce.random
    ) {
        self.hash = hash
        self.username = username
        self.password = password
        self.authzid = authzid
        self.acceptedIterations = acceptedIterations
        self.nonceGenerator = nonceGenerator
    }

    /// True once the server's signature has been verified.
    public var isAuthenticated: Bool {
        if case .authenticated = state { true } else { false }
    }

    public mutating func clientFirst() throws(SCRAMClientError) -> [UInt8] {
        guard case .initial = state else { throw fail(.unexpectedMessage) }
        guard !username.isEmpty, !username.unicodeScalars.contains("\0") else { throw fail(.invalidUsername) }
        if let authzid, authzid.isEmpty || authzid.unicodeScalars.contains("\0") {
            throw fail(.invalidAuthzid)
        }
        let preparedPassword: String
        do throws(SASLprep.Error) {
            preparedPassword = try SASLprep.prepare(password)
        } catch {
            throw fail(.invalidPassword(error))
        }
        let clientNonce: String
        do throws(CryptoError) {
            clientNonce = try nonceGenerator()
        } catch {
            throw fail(.crypto(error))
        }
        guard SCRAMSyntax.isValidNonce(clientNonce[...]) else { throw fail(.crypto(.invalidArgument("nonce"))) }
        // We never offer -PLUS yet, so the flag is always "n" (RFC 5802 §6 would allow "y" to
        // tell a server that supports binding that we could have bound).
        let gs2Header = "n,\(authzid.map { "a=" + SCRAMSyntax.escape($0) } ?? ""),"
        let bare = "n=\(SCRAMSyntax.escape(username)),r=\(clientNonce)"
        state = .awaitingServerFirst(
            gs2Header: gs2Header, bare: bare, clientNonce: clientNonce, preparedPassword: preparedPassword)
        return Array((gs2Header + bare).utf8)
    }

    /// Parses server-first and returns client-final with the proof.
    public mutating func receiveServerFirst(_ message: [UInt8]) throws(SCRAMClientError) -> [UInt8] {
        guard case .awaitingServerFirst(let gs2Header, let bare, let clientNonce, let preparedPassword) = state else {
            throw fail(.unexpectedMessage)
        }
        guard let text = SCRAMSyntax.text(message), let attributes = SCRAMSyntax.attributes(text[...]) else {
            throw fail(.malformedServerMessage("server-first-message is not an attribute list"))
        }
        if attributes.first?.name == "e" { throw fail(.serverError(String(attributes[0].value))) }
        if attributes.first?.name == "m" { throw fail(.unsupportedMandatoryExtension) }
        guard attributes.count >= 3, attributes[0].name == "r", attributes[1].name == "s", attributes[2].name == "i"
        else { throw fail(.malformedServerMessage("server-first-message needs r=, s= and i=")) }
        let nonce = attributes[0].value
        guard SCRAMSyntax.isValidNonce(nonce) else { throw fail(.malformedServerMessage("invalid nonce")) }
        // The server must echo our nonce and may only append to it: anything else means the
        // message does not belong to this exchange.
        guard nonce.hasPrefix(clientNonce) else { throw fail(.nonceMismatch) }
        guard let salt = try? Base64.decode(attributes[1].value), !salt.isEmpty else {
            throw fail(.malformedServerMessage("invalid salt"))
        }
        guard let iterations = SCRAMSyntax.positiveNumber(attributes[2].value) else {
            throw fail(.malformedServerMessage("invalid iteration count"))
        }
        serverIterations = iterations
        serverSalt = salt
        guard acceptedIterations.contains(iterations) else { throw fail(.iterationCountOutOfRange(iterations)) }

        let withoutProof = "c=\(Base64.encode(Array(gs2Header.utf8))),r=\(nonce)"
        let authMessage = Array("\(bare),\(text),\(withoutProof)".utf8)
        do throws(CryptoError) {
            let keys = try SCRAMKeys(preparedPassword: preparedPassword, salt: salt, iterations: iterations, hash: hash)
            let clientSignature = try hash.hmac(key: keys.storedKey, data: authMessage)
            let proof = try ConstantTime.xor(keys.clientKey, clientSignature)
            let serverSignature = try hash.hmac(key: keys.serverKey, data: authMessage)
            state = .awaitingServerFinal(expectedServerSignature: serverSignature)
            return Array("\(withoutProof),p=\(Base64.encode(proof))".utf8)
        } catch {
            throw fail(.crypto(error))
        }
    }

    /// Verifies server-final (the additional data of `<success/>`, or of a `<challenge/>` from
    /// servers that send it that way).
    public mutating func receiveServerFinal(_ message: [UInt8]) throws(SCRAMClientError) {
        guard case .awaitingServerFinal(let expected) = state else { throw fail(.unexpectedMessage) }
        guard let text = SCRAMSyntax.text(message), let attributes = SCRAMSyntax.attributes(text[...]),
            let first = attributes.first
        else { throw fail(.malformedServerMessage("server-final-message is not an attribute list")) }
        switch first.name {
        case "e":
            throw fail(.serverError(String(first.value)))
        case "v":
            guard let signature = try? Base64.decode(first.value) else {
                throw fail(.malformedServerMessage("verifier is not valid base64"))
            }
            guard ConstantTime.equals(signature, expected) else { throw fail(.invalidServerSignature) }
            state = .authenticated
        default:
            throw fail(.malformedServerMessage("server-final-message needs v= or e="))
        }
    }

    private mutating func fail(_ error: SCRAMClientError) -> SCRAMClientError {
        state = .failed
        return error
    }
}

/// Why the client gave up on a SCRAM exchange; the session then sends `<abort/>` (or, after a
/// `<success/>` that did not verify, closes the stream).
public enum SCRAMClientError: Error, Sendable, Hashable {
    case invalidUsername
    case invalidAuthzid
    case invalidPassword(SASLprep.Error)
    case malformedServerMessage(String)
    case unsupportedMandatoryExtension
    /// server-first's nonce does not start with the client's nonce.
    case nonceMismatch
    case iterationCountOutOfRange(Int)
    /// The server answered with `e=` (RFC 5802 §7 server-error-value).
    case serverError(String)
    /// server-final's `v=` is not what the password yields: the server does not know it.
    case invalidServerSignature
    /// A step was called out of order or after a failure.
    case unexpectedMessage
    case crypto(CryptoError)
}
