import Foundation
import ParleyCore

/// An XEP-0115 §5 verification string built straight from a disco#info `<query/>` as it came
/// over the wire, written apart from the server's code so the two can disagree.
enum CapsCheck {
    static let info = "http://jabber.org/protocol/disco#info"
    static let forms = "jabber:x:data"

    static func ver(of query: XMLElement) throws -> String {
        func less(_ a: String, _ b: String) -> Bool { Array(a.utf8).lexicographicallyPrecedes(Array(b.utf8)) }
        var s = ""
        let identities = query.children("identity", namespace: info).map { identity in
            let lang = identity.attribute("lang", namespace: XMLNamespace.xml) ?? ""
            return "\(identity[attribute: "category"] ?? "")/\(identity[attribute: "type"] ?? "")/\(lang)/\(identity[attribute: "name"] ?? "")"
        }
        s += identities.sorted(by: less).map { $0 + "<" }.joined()
        s += query.children("feature", namespace: info).compactMap { $0[attribute: "var"] }.sorted(by: less).map { $0 + "<" }.joined()
        var typed: [(String, XMLElement)] = []
        for form in query.children("x", namespace: forms) {
            let fields = form.children("field", namespace: forms)
            guard let type = fields.first(where: { $0[attribute: "var"] == "FORM_TYPE" })?.children("value", namespace: forms).first?.text
            else { continue }
            typed.append((type, form))
        }
        for (type, form) in typed.sorted(by: { less($0.0, $1.0) }) {
            s += type + "<"
            let fields = form.children("field", namespace: forms).filter { $0[attribute: "var"] != "FORM_TYPE" }
            for field in fields.sorted(by: { less($0[attribute: "var"] ?? "", $1[attribute: "var"] ?? "") }) {
                s += (field[attribute: "var"] ?? "") + "<"
                s += field.children("value", namespace: forms).map(\.text).sorted(by: less).map { $0 + "<" }.joined()
            }
        }
        return Data(try HashFunction.sha1.digest(Array(s.utf8))).base64EncodedString()
    }
}
