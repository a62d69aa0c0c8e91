@testable import ParleyServer
import ParleyCore
import Testing

/// XEP-0115 §5's own examples, built the way the server builds its disco#info: its `ver` must
/// match them exactly.
@Suite struct ServerCapabilitiesTests {
    static let features = [
        "http://jabber.org/protocol/caps", "http://jabber.org/protocol/disco#info", "http://jabber.org/protocol/disco#items",
        "http://jabber.org/protocol/muc",
    ]

    @Test func theSimpleExample() {
        let caps = ServerCapabilities(
            identities: [DiscoIdentity(category: "client", type: "pc", name: "Exodus 0.9.1")], features: Self.features.reversed(),
            forms: [])
        #expect(caps.ver == "QgayPKawpkPSDYmwT/WM94uAlu0=")
    }

    @Test func theComplexExampleWithAnExtendedForm() {
        var form = XMLElement("x", namespace: XMLNamespace.dataForms, ["type": "result"])
        for (name, values) in [
            ("FORM_TYPE", ["urn:xmpp:dataforms:softwareinfo"]), ("ip_version", ["ipv6", "ipv4"]), ("os", ["Mac"]),
            ("os_version", ["10.5.1"]), ("software", ["Psi"]), ("software_version", ["0.11"]),
        ] {
            // As in the XEP's example, FORM_TYPE is hidden (§5.4 does not trust a form otherwise).
            var field = XMLElement("field", name == "FORM_TYPE" ? ["var": name, "type": "hidden"] : ["var": name])
            for value in values { field.append(XMLElement("value", text: value)) }
            form.append(field)
        }
        let caps = ServerCapabilities(
            identities: [
                DiscoIdentity(category: "client", type: "pc", name: "Psi 0.11", lang: "en"),
                DiscoIdentity(category: "client", type: "pc", name: "Ψ 0.11", lang: "el"),
            ], features: Self.features, forms: [form])
        #expect(caps.ver == "q07IKJEyjvHSyhy//CH0CxmKi8w=")
    }
}
