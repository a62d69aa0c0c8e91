import Foundation
import ParleyCore

/// An XEP-0030 identity beyond the one DiscoModule gives each target.
public struct DiscoIdentity: Sendable, Hashable {
    public var category: String
    public var type: String
    public var name: String?
    public var lang: String?

    public init(category: String, type: String, name: String? = nil, lang: String? = nil) {
        self.category = category
        self.type = type
        self.name = name
        self.lang = lang
    }

    var element: XMLElement {
        var identity = XMLElement("identity", ["category": category, "type": type])
        if let lang { identity.setAttribute("lang", lang, namespace: XMLNamespace.xml) }
        if let name { identity[attribute: "name"] = name }
        return identity
    }
}

/// XEP-0115 entity capabilities of the server itself: the verification string of its
/// disco#info, announced as a stream feature after authentication (§6.3), so a client
/// that has seen this `ver` before need not ask again.
public struct EntityCapabilities: Sendable, Hashable {
    public static let namespace = "http://jabber.org/protocol/caps"
    /// Names the software, not the deployment (§4: "the software that generated the caps").
    public static let node = "https://parley.im"

    public let ver: String

    public init(identities: [DiscoIdentity], features: [String], forms: [XMLElement]) {
        let input = Array(Self.verificationString(identities: identities, features: features, forms: forms).utf8)
        // SHA-1 of a short string cannot fail short of OpenSSL being unusable, and then
        // nothing else works either.
        ver = Data((try? HashFunction.sha1.digest(input)) ?? []).base64EncodedString()
    }

    /// The `NODE#VER` a disco#info request names to ask for exactly this information.
    public var nodeVer: String { "\(Self.node)#\(ver)" }

    public var streamFeature: XMLElement {
        XMLElement("c", namespace: Self.namespace, ["hash": "sha-1", "node": Self.node, "ver": ver])
    }

    /// XEP-0115 §5.1: identities as category/type/lang/name sorted, features sorted, then
    /// each extended form (sorted by FORM_TYPE) as its FORM_TYPE and its other fields sorted
    /// by var, each var followed by its values sorted; every item ends with '<'. Sorting is
    /// by octets (i;octet), which Swift's UTF-8 comparison of Strings is.
    static func verificationString(identities: [DiscoIdentity], features: [String], forms: [XMLElement]) -> String {
        var s = ""
        let identityStrings = identities.map { "\($0.category)/\($0.type)/\($0.lang ?? "")/\($0.name ?? "")" }
        for identity in identityStrings.sorted(by: octets) { s += identity + "<" }
        for feature in Set(features).sorted(by: octets) { s += feature + "<" }
        let typed = forms.compactMap { form -> (String, XMLElement)? in
            guard let type = formType(form) else { return nil }  // §5.4: forms without one are ignored
            return (type, form)
        }
        for (type, form) in typed.sorted(by: { octets($0.0, $1.0) }) {
            s += type + "<"
            let fields = form.children("field", namespace: XMLNamespace.dataForms).filter { $0[attribute: "var"] != "FORM_TYPE" }
            for field in fields.sorted(by: { octets($0[attribute: "var"] ?? "", $1[attribute: "var"] ?? "") }) {
                s += (field[attribute: "var"] ?? "") + "<"
                let values = field.children("value", namespace: XMLNamespace.dataForms).map(\.text)
                for value in values.sorted(by: octets) { s += value + "<" }
            }
        }
        return s
    }

    static func formType(_ form: XMLElement) -> String? {
        form.children("field", namespace: XMLNamespace.dataForms).first { $0[attribute: "var"] == "FORM_TYPE" }?
            .firstChild("value", namespace: XMLNamespace.dataForms)?.text
    }

    private static func octets(_ a: String, _ b: String) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8)
    }
}
