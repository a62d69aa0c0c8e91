import ParleyCore

/// XEP-0157 contact addresses: how to reach the people behind the server, as an XEP-0128
/// form in the server's disco#info (and so in its XEP-0115 capabilities).
public struct ContactAddressesModule: ServerModule {
    public static let formType = "http://jabber.org/network/serverinfo"

    /// Field name and addresses, in the order XEP-0157 §2 lists them.
    let fields: [(String, [String])]

    public init(_ contact: ServerConfiguration.ContactInfo) {
        fields = [
            ("abuse-addresses", contact.abuse), ("admin-addresses", contact.admin), ("feedback-addresses", contact.feedback),
            ("sales-addresses", contact.sales), ("security-addresses", contact.security), ("support-addresses", contact.support),
        ].filter { !$0.1.isEmpty }
    }

    public func register(in registry: inout ModuleRegistry) throws(ModuleRegistry.Error) {
        // An empty form would tell clients the operator has no addresses, which is not what
        // leaving them out of the configuration means.
        guard !fields.isEmpty else { return }
        registry.advertiseInfoForm(form)
    }

    var form: XMLElement {
        var form = XMLElement("x", namespace: XMLNamespace.dataForms, ["type": "result"])
        var formType = XMLElement("field", ["var": "FORM_TYPE", "type": "hidden"])
        formType.append(XMLElement("value", text: Self.formType))
        form.append(formType)
        for (name, addresses) in fields {
            var field = XMLElement("field", ["var": name, "type": "list-multi"])
            for address in addresses { field.append(XMLElement("value", text: address)) }
            form.append(field)
        }
        return form
    }
}
