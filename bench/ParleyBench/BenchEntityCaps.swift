import ParleyCore

/// What a benchmark client says about itself under XEP-0115 (entity capabilities): one
/// identity and a few features, among them `NODE+notify` (XEP-0163), hashed into the
/// `ver` of the `<c/>` it puts in its presence, and the disco#info answer the server asks
/// for when it has not seen that `ver` yet.
///
/// The `ver` must be right: ejabberd checks it against the answer and ignores features whose
/// hash does not verify, and then the contact is sent no notifications at all.
enum BenchCapsError: Error { case unhashable }

struct BenchEntityCaps: Sendable {
    static let capsNamespace = "http://jabber.org/protocol/caps"
    /// The caps node naming this "client" (XEP-0115 §4: a URI for the software).
    static let softwareNode = "https://parley.invalid/bench"

    let features: [String]
    let ver: String

    private static let identity = (category: "client", type: "pc", name: "ParleyBench")

    /// Interested in notifications of `notifyNodes` (each gets its `+notify` feature).
    init(notifyNodes: [String]) throws {
        var features = [Self.capsNamespace, XMLNamespace.discoInfo]
        for node in notifyNodes { features += [node, node + "+notify"] }
        // XEP-0115 §5.1 sorts by i;octet, the bytes, which String's ordering need not be.
        self.features = Set(features).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        let identity = Self.identity
        var query = XMLElement("query", namespace: XMLNamespace.discoInfo)
        query.append(XMLElement("identity", ["category": identity.category, "type": identity.type, "name": identity.name]))
        for feature in self.features { query.append(XMLElement("feature", ["var": feature])) }
        guard let ver = CapabilitiesHash.sha1Ver(of: query) else { throw BenchCapsError.unhashable }
        self.ver = ver
    }

    /// The `<c/>` element for presence.
    var presenceElement: String {
        "<c xmlns='\(Self.capsNamespace)' hash='sha-1' node='\(Self.softwareNode)' ver='\(ver)'/>"
    }

    /// The result for a disco#info get, echoing the node it asked about (`node#ver` when the
    /// server checks the caps).
    func discoInfoResult(to requester: String?, id: String, node: String?) -> String {
        let identity = Self.identity
        var text = "<iq type='result' id='\(escaped(id))'"
        if let requester { text += " to='\(escaped(requester))'" }
        text += "><query xmlns='\(XMLNamespace.discoInfo)'"
        if let node { text += " node='\(escaped(node))'" }
        text += "><identity category='\(identity.category)' type='\(identity.type)' name='\(identity.name)'/>"
        for feature in features { text += "<feature var='\(feature)'/>" }
        return text + "</query></iq>"
    }
}

/// Escapes a value from the network for an attribute in single quotes or for text.
func escaped(_ value: String) -> String {
    guard value.contains(where: { $0 == "&" || $0 == "<" || $0 == ">" || $0 == "'" || $0 == "\"" }) else {
        return value
    }
    var result = ""
    for character in value {
        switch character {
        case "&": result += "&amp;"
        case "<": result += "&lt;"
        case ">": result += "&gt;"
        case "'": result += "&apos;"
        case "\"": result += "&quot;"
        default: result.append(character)
        }
    }
    return result
}
