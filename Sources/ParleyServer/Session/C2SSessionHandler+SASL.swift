import NIOCore
import ParleyCore
import ParleyStorage
import ParleyStream

/// SASL authentication (RFC 6120 §6) with SCRAM-SHA-256, SCRAM-SHA-1 and PLAIN, checked
/// against stored SCRAM keys only.
extension C2SSessionHandler {
    func beginAuthentication(_ element: XMLElement) {
        if let wait = server.authFailures.lockout(for: remoteAddress) {
            let seconds = max(1, wait.nanoseconds / 1_000_000_000)
            return fail(StreamError(.policyViolation, text: "Too many failed authentication attempts from your address; try again in \(seconds) seconds."))
        }
        let auth: SASLElement
        do {
            auth = try SASLElement(parsing: element)
        } catch {
            return send(error.element)
        }
        guard case .auth(let name, let initialResponse) = auth,
            let mechanism = SASLMechanism(rawValue: name),
            server.policy.mechanisms.contains(mechanism)
        else {
            return send(SASLFailure(.invalidMechanism, text: "Offered mechanisms: \(offeredMechanismList).").element)
        }
        guard server.policy.offeredMechanisms(secure: isSecure).contains(mechanism) else {
            return send(SASLFailure(.encryptionRequired, text: "\(name) is only allowed over TLS.").element)
        }
        if let hash = mechanism.scramHash {
            let scram = SCRAMServer(hash: hash)
            guard let clientFirst = initialResponse, !clientFirst.isEmpty else {
                phase = .authenticating(.scramAwaitingClientFirst(scram))
                return send(SASLElement.challenge([]).element)
            }
            receiveSCRAMClientFirst(clientFirst, scram)
        } else {
            guard let message = initialResponse, !message.isEmpty else {
                phase = .authenticating(.plainAwaitingResponse)
                return send(SASLElement.challenge([]).element)
            }
            verifyPLAIN(message)
        }
    }

    private var offeredMechanismList: String {
        server.policy.offeredMechanisms(secure: isSecure).map(\.rawValue).joined(separator: ", ")
    }

    func continueAuthentication(_ exchange: SASLExchange, with element: XMLElement) {
        let received: SASLElement
        do {
            received = try SASLElement(parsing: element)
        } catch {
            return authenticationFailed(error)
        }
        switch (exchange, received) {
        case (_, .abort):
            phase = .negotiating
            send(SASLFailure(.aborted).element)
        case (.scramAwaitingClientFirst(let scram), .response(let data)):
            receiveSCRAMClientFirst(data, scram)
        case (.scramAwaitingClientFinal(var scram, _), .response(let data)):
            do {
                let outcome = try scram.receiveClientFinal(data)
                try checkAuthzid(outcome.authzid, username: outcome.username)
                let accountID = scramAccountID
                scramAccountID = nil
                authenticationSucceeded(username: outcome.username, accountID: accountID, additionalData: outcome.serverFinal)
            } catch {
                authenticationFailed(error)
            }
        case (.plainAwaitingResponse, .response(let data)):
            verifyPLAIN(data)
        default:
            authenticationFailed(SASLFailure(.malformedRequest, text: "<\(element.name)/> was not expected at this point of the exchange."))
        }
    }

    private func receiveSCRAMClientFirst(_ message: [UInt8], _ scram: SCRAMServer) {
        var scram = scram
        let clientFirst: SCRAMServer.ClientFirst
        let username: String
        do {
            clientFirst = try scram.receiveClientFirst(message)
            username = try JID(localpart: clientFirst.username, domainpart: server.policy.domain.domainpart).localpart ?? ""
        } catch let failure as SASLFailure {
            return authenticationFailed(failure)
        } catch {
            return authenticationFailed(SASLFailure(.notAuthorized))
        }
        let accounts = server.accounts
        // The lookup answers on a storage thread, and one hop brings it back here: no task.
        suspend(lookup: { (answer: @escaping @Sendable (Result<AccountRecord?, any Error>) -> Void) in
            accounts.account(username: username, completion: answer)
        }) { [self] result in
            do {
                let challenge: [UInt8]
                if case .success(let record?) = result,
                    let credentials = AccountCredentials.credentials(for: scram.hash, in: record)
                {
                    challenge = try scram.serverFirst(credentials: credentials)
                    scramAccountID = record.id
                } else if case .failure(let error) = result {
                    logger.error("account lookup failed", metadata: ["error": "\(error)"])
                    return authenticationFailed(SASLFailure(.temporaryAuthFailure))
                } else {
                    // Unknown users get a stable fake salt and the iteration count new
                    // accounts get, and fail only at the end, exactly like a wrong password.
                    challenge = try scram.serverFirstForUnknownUser(
                        serverSecret: server.unknownUserSecret, iterations: server.policy.scramIterations)
                }
                phase = .authenticating(.scramAwaitingClientFinal(scram, username: username))
                send(SASLElement.challenge(challenge).element)
            } catch {
                authenticationFailed(error)
            }
        }
    }

    private func verifyPLAIN(_ message: [UInt8]) {
        let plain: PLAINMessage
        let username: String
        do {
            plain = try PLAINMessage(parsing: message)
            username = try JID(localpart: plain.authcid, domainpart: server.policy.domain.domainpart).localpart ?? ""
            try checkAuthzid(plain.authzid, username: username)
        } catch let failure as SASLFailure {
            return authenticationFailed(failure)
        } catch {
            return authenticationFailed(SASLFailure(.notAuthorized))
        }
        let accounts = server.accounts
        let secret = server.unknownUserSecret
        let iterations = server.policy.scramIterations
        // PBKDF2 runs here, off the event loop, with the stored salt and iteration count.
        suspend({ () async throws -> Int64?? in
            guard let record = try await accounts.account(username: username),
                let credentials = AccountCredentials.credentials(for: .sha256, in: record)
                    ?? AccountCredentials.credentials(for: .sha1, in: record)
            else {
                // The same PBKDF2 as for a real account, so the time to answer does not tell
                // which usernames exist; stand-in credentials match no password.
                let standIn = try SCRAMCredentials.unknownUser(
                    username: username, serverSecret: secret, iterations: iterations, hash: .sha256)
                _ = try? plain.verify(against: standIn)
                return nil
            }
            do {
                try plain.verify(against: credentials)
                return .some(record.id)
            } catch {
                return nil
            }
        }) { [self] result in
            switch result {
            case .success(.some(let accountID)): authenticationSucceeded(username: username, accountID: accountID, additionalData: nil)
            case .success(.none): authenticationFailed(SASLFailure(.notAuthorized))
            case .failure: authenticationFailed(SASLFailure(.temporaryAuthFailure))
            }
        }
    }

    /// `suspend` for work that reports through a callback on another thread (a store's
    /// lookup that needs no Swift task): one hop back to the event loop when it answers.
    private func suspend<Value: Sendable>(
        lookup: (@escaping @Sendable (Result<Value, any Error>) -> Void) -> Void,
        then resume: @escaping (Result<Value, any Error>) -> Void
    ) {
        guard let context else { return }
        isSuspended = true
        let eventLoop = context.eventLoop
        let loopBound = NIOLoopBound((self, resume), eventLoop: eventLoop)
        lookup { result in
            eventLoop.execute {
                let (handler, resume) = loopBound.value
                handler.isSuspended = false
                guard !handler.isClosed else { return }
                resume(result)
                handler.drainSuspendedEvents()
            }
        }
    }

    /// RFC 6120 §6.3.8: an authorization identity is allowed only if it names the account
    /// that authenticated.
    private func checkAuthzid(_ authzid: String?, username: String) throws(SASLFailure) {
        guard let authzid, !authzid.isEmpty else { return }
        let own = try? JID(localpart: username, domainpart: server.policy.domain.domainpart)
        guard let requested = try? JID(authzid), requested == own else {
            throw SASLFailure(.invalidAuthzid, text: "You may act only as yourself.")
        }
    }

    private func authenticationSucceeded(username: String, accountID: Int64?, additionalData: [UInt8]?) {
        guard let context else { return }
        authenticatedAccountID = accountID
        server.authFailures.recordSuccess(for: remoteAddress)
        server.metrics.authSuccesses.increment()
        authenticatedUser = username
        phase = .authenticating(.done)
        send(SASLElement.success(additionalData: additionalData).element)
        // The client's next bytes start a new stream on the same connection (§6.4.6).
        context.triggerUserOutboundEvent(XMLStreamDecoder.Restart.afterSASL, promise: nil)
        context.triggerUserOutboundEvent(StreamKeepaliveHandler.AwaitingHeader(), promise: nil)
        phase = .awaitingHeader
        responseHeaderSent = false
    }

    private func authenticationFailed(_ error: Error) {
        let failure = (error as? SASLFailure) ?? SASLFailure(.notAuthorized)
        server.metrics.authFailures.increment()
        phase = .negotiating
        guard failure.condition == .notAuthorized || failure.condition == .malformedRequest,
            let context
        else {
            return send(failure.element)
        }
        // Each failure from an address makes the next answer slower; the client waits for
        // it before it may try again, so guessing gets expensive.
        let delay = server.authFailures.recordFailure(for: remoteAddress)
        logger.info("authentication failed", metadata: ["condition": "\(failure.condition.rawValue)"])
        suspend({
            try await Task.sleep(nanoseconds: UInt64(delay.nanoseconds))
        }) { [self] _ in
            _ = context
            send(failure.element)
        }
    }
}
