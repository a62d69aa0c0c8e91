/// What the stream parser reports, in order, for the bytes of one XML stream.
public enum XMLStreamEvent: Sendable, Hashable {
    /// The stream's root start tag (`<stream:stream …>`) arrived.
    case streamOpened(XMLStreamHeader)
    /// A depth-1 element (a stanza or a stream-level element such as `<starttls/>`) is complete.
    case stanza(XMLElement)
    /// The root end tag (`</stream:stream>`) arrived.
    case streamClosed
}

/// The root element's start tag, with the declarations that the RFC 6120 §4.8 checks need.
public struct XMLStreamHeader: Sendable, Hashable {
    public var name: String
    public var namespace: String
    /// The prefix used on the root element (`stream`), or nil if it had none.
    public var prefix: String?
    public var attributes: [XMLAttribute]
    /// Namespace declarations on the root: prefix → URI, with "" for the default namespace.
    public var namespaceDeclarations: [String: String]

    public init(
        name: String, namespace: String, prefix: String?, attributes: [XMLAttribute],
        namespaceDeclarations: [String: String]
    ) {
        self.name = name
        self.namespace = namespace
        self.prefix = prefix
        self.attributes = attributes
        self.namespaceDeclarations = namespaceDeclarations
    }

    public subscript(attribute name: String) -> String? {
        attributes.first { $0.name == name && $0.namespace == nil }?.value
    }

    /// The content namespace of the stream (`jabber:client` for c2s).
    public var defaultNamespace: String? { namespaceDeclarations[""] }
}
