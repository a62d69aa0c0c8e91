import ParleyCore

/// XEP-0077 in-band registration, which happens on a secured stream before SASL: ask for the
/// form (so the server can refuse early, and to follow §3.1), then submit username and
/// password. The connection then ends; the new account signs in on a fresh one.
extension ClientStreamHandler {

    func askForRegistrationForm() {
        let id = "register-1"
        send(XMLElement(
            "iq", namespace: XMLNamespace.client, ["type": "get", "id": id, "to": configuration.jid.domainpart],
            [XMLElement("query", namespace: XMLNamespace.register)]))
        phase = .registering(id: id, submitted: false)
    }

    func registrationStep(_ answer: XMLElement, submitted: Bool) {
        guard answer.type == "result" else {
            let error = StanzaError(stanza: answer) ?? StanzaError(.undefinedCondition)
            return finishRegistration(.registrationRefused(error))
        }
        if submitted { return finishRegistration(.registered) }
        if let form = answer.firstChild("query", namespace: XMLNamespace.register), form.firstChild("registered") != nil {
            return finishRegistration(.registrationRefused(StanzaError(.conflict, text: "This account already exists.")))
        }
        let id = "register-2"
        var query = XMLElement("query", namespace: XMLNamespace.register)
        query.append(XMLElement("username", text: configuration.jid.localpart ?? ""))
        query.append(XMLElement("password", text: configuration.password))
        send(XMLElement("iq", namespace: XMLNamespace.client, ["type": "set", "id": id, "to": configuration.jid.domainpart], [query]))
        phase = .registering(id: id, submitted: true)
    }
}
