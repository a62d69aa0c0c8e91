/// An XML element as a value: what the stream parser produces for every stanza and what every
/// layer above builds to send one.
///
/// `namespace` is the element's resolved namespace URI. An element built in code may leave it
/// `nil`, meaning "the namespace of whatever I am placed in"; appending such an element to a
/// parent resolves it, so lookups by namespace work on built trees as on parsed ones.
public struct XMLElement: Sendable, Hashable {
    public var name: String
    public var namespace: String?
    public var attributes: [XMLAttribute]
    public var children: [XMLNode]

    public init(
        _ name: String, namespace: String? = nil, attributes: [XMLAttribute] = [],
        children: [XMLNode] = []
    ) {
        self.name = name
        self.namespace = namespace
        self.attributes = attributes
        self.children = children
        if let namespace {
            for index in self.children.indices {
                self.children[index].inheritNamespace(namespace)
            }
        }
    }

    /// The common builder form: `XMLElement("message", namespace: ns, ["to": jid], [body])`.
    public init(
        _ name: String, namespace: String? = nil, _ attributes: KeyValuePairs<String, String>,
        _ children: [XMLElement] = []
    ) {
        self.init(
            name, namespace: namespace,
            attributes: attributes.map { XMLAttribute($0.key, $0.value) },
            children: children.map(XMLNode.element))
    }

    /// An element whose only content is text, such as `<body>hi</body>`.
    public init(
        _ name: String, namespace: String? = nil,
        _ attributes: KeyValuePairs<String, String> = [:], text: String
    ) {
        self.init(
            name, namespace: namespace,
            attributes: attributes.map { XMLAttribute($0.key, $0.value) },
            children: text.isEmpty ? [] : [.text(text)])
    }

    // MARK: Attributes

    /// The value of the attribute with no namespace called `name`.
    public subscript(attribute name: String) -> String? {
        get {
            for attribute in attributes where attribute.name == name && attribute.namespace == nil {
                return attribute.value
            }
            return nil
        }
        set { setAttribute(name, newValue) }
    }

    public func attribute(_ name: String, namespace: String? = nil) -> String? {
        for attribute in attributes where attribute.name == name && attribute.namespace == namespace {
            return attribute.value
        }
        return nil
    }

    /// Sets, replaces or (with `nil`) removes an attribute, keeping the others in order.
    public mutating func setAttribute(_ name: String, _ value: String?, namespace: String? = nil) {
        if let index = attributes.firstIndex(where: { $0.name == name && $0.namespace == namespace }) {
            if let value {
                attributes[index].value = value
            } else {
                attributes.remove(at: index)
            }
        } else if let value {
            attributes.append(XMLAttribute(name, value, namespace: namespace))
        }
    }

    // MARK: Children

    public var elements: [XMLElement] {
        children.compactMap { if case .element(let element) = $0 { element } else { nil } }
    }

    /// The concatenated character data directly inside this element.
    public var text: String {
        var result = ""
        for case .text(let text) in children { result += text }
        return result
    }

    public func firstChild(_ name: String, namespace: String? = nil) -> XMLElement? {
        for case .element(let element) in children
        where element.name == name && (namespace == nil || element.namespace == namespace) {
            return element
        }
        return nil
    }

    public func children(_ name: String, namespace: String? = nil) -> [XMLElement] {
        elements.filter { $0.name == name && (namespace == nil || $0.namespace == namespace) }
    }

    /// The first child element in `namespace`, whatever its name: how payloads such as
    /// `<query xmlns='jabber:iq:roster'/>` or an error condition are found.
    public func firstChild(inNamespace namespace: String) -> XMLElement? {
        for case .element(let element) in children where element.namespace == namespace {
            return element
        }
        return nil
    }

    public mutating func append(_ element: XMLElement) {
        children.append(.element(element))
        if let namespace { children[children.count - 1].inheritNamespace(namespace) }
    }

    public mutating func append(text: String) {
        guard !text.isEmpty else { return }
        children.append(.text(text))
    }

    public mutating func removeChildren(where predicate: (XMLElement) -> Bool) {
        children.removeAll { node in
            if case .element(let element) = node { return predicate(element) }
            return false
        }
    }

    /// Gives this element and its unresolved descendants the namespace they are placed in.
    mutating func inheritNamespace(_ parentNamespace: String) {
        guard namespace == nil else { return }
        namespace = parentNamespace
        for index in children.indices { children[index].inheritNamespace(parentNamespace) }
    }
}

public enum XMLNode: Sendable, Hashable {
    case element(XMLElement)
    case text(String)

    mutating func inheritNamespace(_ namespace: String) {
        if case .element(var element) = self {
            self = .text("")  // drop the reference so the element is mutated in place
            element.inheritNamespace(namespace)
            self = .element(element)
        }
    }
}

public struct XMLAttribute: Sendable, Hashable {
    public var name: String
    /// `nil` for an unprefixed attribute (the usual case); `XMLNamespace.xml` for `xml:lang`.
    public var namespace: String?
    public var value: String

    public init(_ name: String, _ value: String, namespace: String? = nil) {
        self.name = name
        self.value = value
        self.namespace = namespace
    }
}
