/// XEP-0115 §5: the verification string of a disco#info `<query/>` (identities, features and
/// XEP-0128 extended forms, each sorted by octets and ended by '<') and its SHA-1. One
/// implementation for the server (verifying clients' caps, announcing its own), the client
/// (announcing its own) and the benchmark clients, so a `ver` is always computed from exactly
/// the disco#info answer it stands for.
public enum CapabilitiesHash {
    /// The base64 SHA-1 of the §5.1 string, or nil when §5.4 says the result cannot be
    /// trusted (duplicate identities or features, two forms of one FORM_TYPE, a malformed form).
    public static func sha1Ver(of query: XMLElement) -> String? {
        guard let string = verificationString(of: query),
            let digest = try? HashFunction.sha1.digest(Array(string.utf8))
        else { return nil }
        return Base64.encode(digest)
    }

    public static func verificationString(of query: XMLElement) -> String? {
        var string = ""
        let identities = query.children("identity", namespace: XMLNamespace.discoInfo).map { identity in
            [
                identity[attribute: "category"] ?? "", identity[attribute: "type"] ?? "",
                identity.attribute("lang", namespace: XMLNamespace.xml) ?? "", identity[attribute: "name"] ?? "",
            ].joined(separator: "/")
        }
        guard Set(identities).count == identities.count else { return nil }
        for identity in identities.sorted(by: utf8Less) { string += identity + "<" }
        let features = query.children("feature", namespace: XMLNamespace.discoInfo).compactMap { $0[attribute: "var"] }
        guard Set(features).count == features.count else { return nil }
        for feature in features.sorted(by: utf8Less) { string += feature + "<" }

        var forms: [(type: String, text: String)] = []
        for form in query.children("x", namespace: XMLNamespace.dataForms) {
            var formType: String? = nil
            var fields: [(name: String, values: [String])] = []
            for field in form.children("field", namespace: XMLNamespace.dataForms) {
                let values = field.children("value", namespace: XMLNamespace.dataForms).map(\.text)
                guard let name = field[attribute: "var"] else { continue }
                if name == "FORM_TYPE" {
                    // §5.4 3.6: a FORM_TYPE of several values, or not hidden, is not trusted.
                    guard formType == nil, values.count == 1, field[attribute: "type"] == "hidden" else { return nil }
                    formType = values[0]
                } else {
                    fields.append((name, values))
                }
            }
            // A form without FORM_TYPE is left out of the string (§5.4 3.6).
            guard let formType else { continue }
            var text = formType + "<"
            for field in fields.sorted(by: { utf8Less($0.name, $1.name) }) {
                text += field.name + "<"
                for value in field.values.sorted(by: utf8Less) { text += value + "<" }
            }
            forms.append((formType, text))
        }
        guard Set(forms.map(\.type)).count == forms.count else { return nil }
        for form in forms.sorted(by: { utf8Less($0.type, $1.type) }) { string += form.text }
        return string
    }

    /// §5.1 sorts by "i;octet" collation: the bytes of the UTF-8.
    private static func utf8Less(_ a: String, _ b: String) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8)
    }
}
