import ParleyCore

/// The few parts of XEP-0004 data forms that node configuration and publish-options need: a
/// submitted form read as field values, and a form built to show a configuration.
struct PEPDataForm: Sendable {
    var type: String
    var formType: String?
    /// Fields other than FORM_TYPE, in document order: var and values.
    var fields: [(name: String, values: [String])]

    init?(_ element: XMLElement?) {
        guard let element, element.name == "x", element.namespace == XMLNamespace.dataForms else { return nil }
        type = element[attribute: "type"] ?? "form"
        formType = nil
        fields = []
        for field in element.children("field", namespace: XMLNamespace.dataForms) {
            guard let name = field[attribute: "var"] else { continue }
            let values = field.children("value", namespace: XMLNamespace.dataForms).map(\.text)
            if name == "FORM_TYPE" {
                formType = values.first
            } else {
                fields.append((name, values))
            }
        }
    }

    /// The first data form among an element's children.
    static func first(in parent: XMLElement) -> PEPDataForm? {
        PEPDataForm(parent.firstChild("x", namespace: XMLNamespace.dataForms))
    }

    /// Builds `<x xmlns='jabber:x:data' type=…>` with a hidden FORM_TYPE.
    struct Builder {
        private(set) var element: XMLElement

        init(type: String, formType: String) {
            element = XMLElement("x", namespace: XMLNamespace.dataForms, ["type": type])
            add("FORM_TYPE", type: "hidden", values: [formType])
        }

        mutating func add(_ name: String, type: String, label: String? = nil, values: [String], options: [String] = []) {
            var field = XMLElement("field", namespace: XMLNamespace.dataForms, ["var": name, "type": type])
            if let label { field.setAttribute("label", label) }
            for option in options {
                field.append(XMLElement("option", namespace: XMLNamespace.dataForms, [:], [XMLElement("value", namespace: XMLNamespace.dataForms, text: option)]))
            }
            for value in values {
                field.append(XMLElement("value", namespace: XMLNamespace.dataForms, text: value))
            }
            element.append(field)
        }
    }
}
