/// The server side of SCRAM-SHA-1 / SCRAM-SHA-256 (RFC 5802, RFC 7677), without channel
/// binding, as a three-step state machine so that credential lookup (storage I/O) can happen
/// between parsing the client's first message and answering it:
///
/// 1. `receiveClientFirst(_:)` parses client-first and returns the username and authzid;
/// 2. the caller fetches the credentials and calls `serverFirst(credentials:)`, or
///    `serverFirstForUnknownUser(serverSecret:iterations:)` when there is no such account, and
///    sends the result as the challenge;
/// 3. `receiveClientFinal(_:)` verifies the proof and returns server-final (for `<success/>`)
///    with the authenticated identity.
///
/// Every step throws a `SASLFailure` ready to send; after any failure the exchange is dead.
/// Whether the authenticated user may act as the authzid is the caller's policy
/// (`invalid-authzid`).
public struct SCRAMServer: Sendable {
    public struct ClientFirst: Sendable, Hashable {
        /// The username as sent, after `=2C` / `=3D` decoding. Not SASLprep'd: the account layer
        /// normalizes usernames (for XMPP, as a JID localpart).
        public var username: String
        public var authzid: String?
    }

    public struct Outcome: Sendable, Hashable {
        /// server-final-message (`v=…`), the additional data of `<success/>`.
        public var serverFinal: [UInt8]
        public var username: String
        public var authzid: String?
    }

    public let hash: HashFunction
    /// Whether the same stream features also offered the `-PLUS` variant. Then a client that
    /// says "y" (I could bind, but you did not offer it) is seeing a downgrade attack.
    public let advertisesChannelBinding: Bool
    private let nonceGenerator: SCRAMNonce.Generator
    private var state: State = .awaitingClientFirst

    private struct ParsedClientFirst: Sendable {
        var gs2Header: Substring
        var bare: Substring
        var clientNonce: Substring
        var identity: ClientFirst
    }

    private struct Pending: Sendable {
        var clientFirst: ParsedClientFirst
        var serverFirst: String
        var nonce: String
        var credentials: SCRAMCredentials
        /// Set for stand-in credentials: the exchange runs to the end and then fails.
        var mustFail: Bool
    }

    private enum State: Sendable {
        case awaitingClientFirst
        case awaitingCredentials(ParsedClientFirst)
        case awaitingClientFinal(Pending)
        case finished
        case failed
    }

    public init(
        hash: HashFunction, advertisesChannelBinding: Bool = false,
        nonceGenerator: @escaping SCRAMNonce.Generator = SCRAMNonce.random
    ) {
        self.hash = hash
        self.advertisesChannelBinding = advertisesChannelBinding
        self.nonceGenerator = nonceGenerator
    }

    // MARK: Step 1

    public mutating func receiveClientFirst(_ message: [UInt8]) throws(SASLFailure) -> ClientFirst {
        guard case .awaitingClientFirst = state else { throw fail(.malformedRequest("unexpected client-first-message")) }
        do throws(SASLFailure) {
            let parsed = try Self.parseClientFirst(message, advertisesChannelBinding: advertisesChannelBinding)
            state = .awaitingCredentials(parsed)
            return parsed.identity
        } catch {
            throw fail(error)
        }
    }

    private static func parseClientFirst(
        _ message: [UInt8], advertisesChannelBinding: Bool
    ) throws(SASLFailure) -> ParsedClientFirst {
        guard let text = SCRAMSyntax.text(message) else {
            throw .malformedRequest("client-first-message is not valid UTF-8 text")
        }
        // gs2-header = gs2-cbind-flag "," [authzid] ","
        let fields = text.split(separator: ",", maxSplits: 2, omittingEmptySubsequences: false)
        guard fields.count == 3 else { throw .malformedRequest("missing GS2 header") }
        switch fields[0] {
        case "n":
            break
        case "y":
            // RFC 5802 §6: fine unless we offered channel binding, in which case someone removed
            // it from the features the client saw.
            if advertisesChannelBinding { throw .notAuthorized("channel binding downgrade detected") }
        default:
            if fields[0].hasPrefix("p=") {
                throw .malformedRequest("channel binding requested with a mechanism that has none")
            }
            throw .malformedRequest("invalid GS2 channel binding flag")
        }
        var authzid: String?
        if !fields[1].isEmpty {
            guard fields[1].hasPrefix("a="), let decoded = SCRAMSyntax.unescape(fields[1].dropFirst(2)) else {
                throw .malformedRequest("invalid authzid in GS2 header")
            }
            authzid = decoded
        }
        let bare = fields[2]
        let gs2Header = text[text.startIndex..<bare.startIndex]

        // client-first-message-bare = [reserved-mext ","] username "," nonce ["," extensions]
        guard let attributes = SCRAMSyntax.attributes(bare) else {
            throw .malformedRequest("malformed attribute list")
        }
        if attributes.first?.name == "m" { throw .malformedRequest("unsupported mandatory extension") }
        guard attributes.count >= 2, attributes[0].name == "n", attributes[1].name == "r" else {
            throw .malformedRequest("client-first-message needs n= and r=")
        }
        guard let username = SCRAMSyntax.unescape(attributes[0].value) else {
            throw .malformedRequest("invalid username encoding")
        }
        guard SCRAMSyntax.isValidNonce(attributes[1].value) else { throw .malformedRequest("invalid nonce") }
        // Later attributes are extensions, which RFC 5802 §5.1 says to ignore.
        return ParsedClientFirst(
            gs2Header: gs2Header, bare: bare, clientNonce: attributes[1].value,
            identity: ClientFirst(username: username, authzid: authzid))
    }

    // MARK: Step 2

    /// Answers client-first for an existing account.
    public mutating func serverFirst(credentials: SCRAMCredentials) throws(SASLFailure) -> [UInt8] {
        try start(credentials: credentials, mustFail: false)
    }

    /// Answers client-first for a username without an account (or without credentials for this
    /// hash) exactly as for a real one, with deterministic stand-in salt and keys; the exchange
    /// then fails with `not-authorized` at the last step, as a wrong password would. Pass the
    /// iteration count real accounts are created with.
    public mutating func serverFirstForUnknownUser(
        serverSecret: [UInt8], iterations: Int = SCRAMCredentials.minimumIterations
    ) throws(SASLFailure) -> [UInt8] {
        guard case .awaitingCredentials(let clientFirst) = state else {
            throw fail(.malformedRequest("unexpected server-first request"))
        }
        let credentials: SCRAMCredentials
        do throws(CryptoError) {
            credentials = try SCRAMCredentials.unknownUser(
                username: clientFirst.identity.username, serverSecret: serverSecret, iterations: iterations,
                hash: hash)
        } catch {
            throw fail(SASLFailure(.temporaryAuthFailure))
        }
        return try start(credentials: credentials, mustFail: true)
    }

    private mutating func start(credentials: SCRAMCredentials, mustFail: Bool) throws(SASLFailure) -> [UInt8] {
        guard case .awaitingCredentials(let clientFirst) = state else {
            throw fail(.malformedRequest("unexpected server-first request"))
        }
        // A mismatch is a caller bug (credentials for the wrong mechanism); do not run with them.
        guard credentials.hash == hash, credentials.iterations >= 1, !credentials.salt.isEmpty,
            credentials.storedKey.count == hash.digestSize, credentials.serverKey.count == hash.digestSize
        else { throw fail(SASLFailure(.temporaryAuthFailure)) }
        let serverNonce: String
        do throws(CryptoError) {
            serverNonce = try nonceGenerator()
        } catch {
            throw fail(SASLFailure(.temporaryAuthFailure))
        }
        let nonce = String(clientFirst.clientNonce) + serverNonce
        let serverFirst = "r=\(nonce),s=\(Base64.encode(credentials.salt)),i=\(credentials.iterations)"
        state = .awaitingClientFinal(
            Pending(
                clientFirst: clientFirst, serverFirst: serverFirst, nonce: nonce, credentials: credentials,
                mustFail: mustFail))
        return Array(serverFirst.utf8)
    }

    // MARK: Step 3

    public mutating func receiveClientFinal(_ message: [UInt8]) throws(SASLFailure) -> Outcome {
        guard case .awaitingClientFinal(let pending) = state else {
            throw fail(.malformedRequest("unexpected client-final-message"))
        }
        do throws(SASLFailure) {
            let outcome = try Self.verifyClientFinal(message, pending: pending, hash: hash)
            state = .finished
            return outcome
        } catch {
            throw fail(error)
        }
    }

    private static func verifyClientFinal(
        _ message: [UInt8], pending: Pending, hash: HashFunction
    ) throws(SASLFailure) -> Outcome {
        guard let text = SCRAMSyntax.text(message) else {
            throw .malformedRequest("client-final-message is not valid UTF-8 text")
        }
        // client-final-message = channel-binding "," nonce ["," extensions] "," proof
        guard let attributes = SCRAMSyntax.attributes(text[...]) else {
            throw .malformedRequest("malformed attribute list")
        }
        guard attributes.count >= 3, attributes[0].name == "c", attributes[1].name == "r",
            let proofAttribute = attributes.last, proofAttribute.name == "p"
        else { throw .malformedRequest("client-final-message needs c=, r= and a final p=") }

        guard let channelBinding = try? Base64.decode(attributes[0].value) else {
            throw .malformedRequest("channel binding is not valid base64")
        }
        // Without -PLUS there is no channel binding data: c= must repeat the GS2 header exactly,
        // which also authenticates the authzid and the "y"/"n" flag.
        guard channelBinding == Array(pending.clientFirst.gs2Header.utf8) else {
            throw .notAuthorized("channel binding does not match")
        }
        guard attributes[1].value == pending.nonce else { throw .notAuthorized("nonce does not match") }
        guard let proof = try? Base64.decode(proofAttribute.value) else {
            throw .malformedRequest("proof is not valid base64")
        }
        guard proof.count == hash.digestSize else { throw .malformedRequest("proof has the wrong length") }

        // The proof attribute is last, so the message without it is a prefix ending before ",p=".
        let withoutProof = text[..<text.index(proofAttribute.value.startIndex, offsetBy: -3)]
        let authMessage = Array("\(pending.clientFirst.bare),\(pending.serverFirst),\(withoutProof)".utf8)
        let credentials = pending.credentials
        let verified: Bool
        let serverSignature: [UInt8]
        do throws(CryptoError) {
            let clientSignature = try hash.hmac(key: credentials.storedKey, data: authMessage)
            let clientKey = try ConstantTime.xor(proof, clientSignature)
            verified = ConstantTime.equals(try hash.digest(clientKey), credentials.storedKey)
            serverSignature = try hash.hmac(key: credentials.serverKey, data: authMessage)
        } catch {
            throw SASLFailure(.temporaryAuthFailure)
        }
        guard verified, !pending.mustFail else { throw .notAuthorized() }
        return Outcome(
            serverFinal: Array("v=\(Base64.encode(serverSignature))".utf8),
            username: pending.clientFirst.identity.username, authzid: pending.clientFirst.identity.authzid)
    }

    private mutating func fail(_ failure: SASLFailure) -> SASLFailure {
        state = .failed
        return failure
    }
}
