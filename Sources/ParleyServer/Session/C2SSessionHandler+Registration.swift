import ParleyCore

/// XEP-0077 before authentication: the form, and account creation when the operator
/// allows it. Creation hashes the password, so it runs off the event loop.
extension C2SSessionHandler {
    func handlePreAuthenticationRegistration(_ iq: XMLElement) {
        guard let registration = server.registration, let query = iq.firstChild("query", namespace: RegistrationModule.namespace) else {
            return send(iq.errorReply(StanzaError(.serviceUnavailable)) ?? iq)
        }
        switch iq.type {
        case "get":
            guard registration.allowsNewAccounts else {
                return send(iq.errorReply(StanzaError(.serviceUnavailable, text: "This server does not allow in-band registration.")) ?? iq)
            }
            var reply = iq.iqResult(registration.registrationForm())
            reply.to = nil
            send(reply)
        case "set":
            // Untyped throws on purpose: the typed-throws thunk crashes Swift 6.3.1's SIL passes.
            suspend({ () async throws -> Void in
                do {
                    try await registration.createAccount(from: query)
                } catch {
                    throw error as Error
                }
            }) { [self] result in
                switch result {
                case .success:
                    logger.info("account registered in-band")
                    var reply = iq.iqResult()
                    reply.to = nil
                    send(reply)
                case .failure(let error):
                    let stanzaError = (error as? StanzaError) ?? StanzaError(.internalServerError)
                    send(iq.errorReply(stanzaError) ?? iq)
                }
            }
        default:
            send(iq.errorReply(StanzaError(.badRequest, text: "Registration takes an iq get or set.")) ?? iq)
        }
    }
}
