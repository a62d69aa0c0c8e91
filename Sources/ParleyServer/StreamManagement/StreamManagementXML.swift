import ParleyCore

/// The elements of XEP-0198 (`urn:xmpp:sm:3`) the server sends.
enum StreamManagementXML {
    static let namespace = XMLNamespace.streamManagement

    static var feature: XMLElement { XMLElement("sm", namespace: namespace) }

    static func enabled(id: String?, maxSeconds: Int?) -> XMLElement {
        var element = XMLElement("enabled", namespace: namespace)
        if let id {
            element[attribute: "id"] = id
            element[attribute: "resume"] = "true"
            if let maxSeconds { element[attribute: "max"] = String(maxSeconds) }
        }
        return element
    }

    static func failed(_ condition: StanzaErrorCondition, h: UInt32? = nil) -> XMLElement {
        var element = XMLElement("failed", namespace: namespace)
        if let h { element[attribute: "h"] = String(h) }
        element.append(XMLElement(condition.rawValue, namespace: XMLNamespace.stanzaErrors))
        return element
    }

    static func resumed(previd: String, h: UInt32) -> XMLElement {
        XMLElement("resumed", namespace: namespace, ["previd": previd, "h": String(h)])
    }

    static var request: XMLElement { XMLElement("r", namespace: namespace) }

    static func answer(_ h: UInt32) -> XMLElement {
        XMLElement("a", namespace: namespace, ["h": String(h)])
    }

    /// The application condition of the `undefined-condition` stream error for an `h` that
    /// acknowledges more than was sent.
    static func handledCountTooHigh(h: UInt32, sendCount: UInt32) -> XMLElement {
        XMLElement("handled-count-too-high", namespace: namespace, ["h": String(h), "send-count": String(sendCount)])
    }

    /// `h` attributes are xs:unsignedInt.
    static func counter(_ text: String?) -> UInt32? {
        text.flatMap { UInt32($0) }
    }
}
