import ParleyCore
import ParleyStorage

/// XEP-0077 in-band registration: creating an account before authentication (only when the
/// operator enabled it), and, once authenticated, changing the password or removing the
/// account — which stay available even when new registrations are off, as users expect.
public final class RegistrationModule: ServerModule {
    public static let namespace = XMLNamespace.register

    let accounts: any AccountStore
    let domain: JID
    let allowsNewAccounts: Bool
    let minimumPasswordLength: Int
    let iterations: Int

    public init(accounts: any AccountStore, domain: JID, allowsNewAccounts: Bool, minimumPasswordLength: Int, iterations: Int) {
        self.accounts = accounts
        self.domain = domain
        self.allowsNewAccounts = allowsNewAccounts
        self.minimumPasswordLength = minimumPasswordLength
        self.iterations = iterations
    }

    public func register(in registry: inout ModuleRegistry) throws(ModuleRegistry.Error) {
        for target in [IQTarget.server, .account] {
            try registry.handle(.get, "query", namespace: Self.namespace, for: target, advertise: target == .server) { request, responder in
                guard request.to.isDomain || request.isToOwnAccount else { return responder.error(StanzaError(.serviceUnavailable)) }
                var query = XMLElement("query", namespace: Self.namespace)
                query.append(XMLElement("registered"))
                query.append(XMLElement("username", text: request.from.localpart ?? ""))
                query.append(XMLElement("password"))
                responder.result(query)
            }
            try registry.handle(.set, "query", namespace: Self.namespace, for: target, advertise: false) { [self] request, responder in
                guard request.to.isDomain || request.isToOwnAccount, let username = request.from.localpart else {
                    return responder.error(StanzaError(.serviceUnavailable))
                }
                let query = request.payload
                responder.answer { [self] in
                    if query.firstChild("remove", namespace: Self.namespace) != nil {
                        _ = try await accounts.deleteAccount(username: username, origin: .inband)
                        return nil
                    }
                    let fields = try fields(of: query)
                    guard try JID(localpart: fields.username, domainpart: domain.domainpart).localpart == username else {
                        throw StanzaError(.notAllowed, text: "You can only change your own password.")
                    }
                    let keys = try await derive(fields.password)
                    try await accounts.updateKeys(username: username, keys: keys, origin: .inband)
                    return nil
                }
            }
        }
    }

    /// The form a client fills in to create an account (XEP-0077 §3.1).
    public func registrationForm() -> XMLElement {
        var query = XMLElement("query", namespace: Self.namespace)
        query.append(XMLElement("instructions", text: "Choose a username and password for an account on \(domain)."))
        query.append(XMLElement("username"))
        query.append(XMLElement("password"))
        return query
    }

    /// Creates the account a pre-authentication `<iq type='set'/>` asks for.
    public func createAccount(from query: XMLElement) async throws(StanzaError) {
        guard allowsNewAccounts else {
            throw StanzaError(.serviceUnavailable, text: "This server does not allow in-band registration.")
        }
        let fields = try fields(of: query)
        let username: String
        do {
            username = try JID(localpart: fields.username, domainpart: domain.domainpart).localpart ?? ""
        } catch {
            throw StanzaError(.jidMalformed, text: "The username is not valid: \(error).")
        }
        let keys = try await derive(fields.password)
        do {
            try await accounts.createAccount(username: username, keys: keys)
        } catch StorageError.accountExists {
            throw StanzaError(.conflict, text: "The username '\(username)' is taken.")
        } catch {
            throw StanzaError(.internalServerError, text: "The account could not be stored.")
        }
    }

    private func fields(of query: XMLElement) throws(StanzaError) -> (username: String, password: String) {
        guard let username = query.firstChild("username", namespace: Self.namespace)?.text, !username.isEmpty,
            let password = query.firstChild("password", namespace: Self.namespace)?.text, !password.isEmpty
        else {
            throw StanzaError(.notAcceptable, text: "Both a username and a password are required.")
        }
        guard password.count >= minimumPasswordLength else {
            throw StanzaError(.notAcceptable, text: "The password must have at least \(minimumPasswordLength) characters.")
        }
        return (username, password)
    }

    private func derive(_ password: String) async throws(StanzaError) -> [StoredSCRAMKeys] {
        do {
            return try AccountCredentials.derive(password: password, iterations: iterations)
        } catch {
            throw StanzaError(.notAcceptable, text: "The password cannot be used: \(error).")
        }
    }
}
