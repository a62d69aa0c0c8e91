/// An XML element as a value: what the stream parser produces for every stanza and what every
/// layer above builds to send one.
///
/// `namespace` is the element's resolved namespace URI. An element built in code may leave it
/// `nil` (or ""), meaning "the namespace of whatever I am placed in"; appending such an element to a
/// parent resolves it, so lookups by namespace work on built trees as on parsed ones.
///
/// A parsed element is a view into its stanza's `XMLArena` until something changes it: reads
/// work on the arena directly, and the first mutation copies just that element's attributes
/// and child list out (its children stay views), so stamping `from` on a stanza does not copy
/// its payloads. Equality and hashing compare content, whatever the form.
public struct XMLElement: Sendable {
    public var name: String
    public var namespace: String? {
        get { namespaceURI.isEmpty ? nil : namespaceURI }
        set { namespaceURI = newValue ?? "" }
    }
    /// `namespace`, with "" for none (as `xmlns=''` says in XML): a plain String, because this
    /// compiler destroys a stored `String?` through the runtime's generic value witness, which
    /// costs a stanza's every copy and release some ninety instructions.
    var namespaceURI: String
    /// Attributes and children. Two forms in 16 bytes, so an element stays 48 bytes, which
    /// Swift still moves rather than copies.
    var content: Content

    /// Unchecked only for the arena, which nobody writes while it is shared (see `XMLArena`).
    enum Content: @unchecked Sendable {
        case built([XMLAttribute], [XMLNode])
        /// Element `node` of a parsed stanza.
        case arena(XMLArena, Int32)
        /// An element serialized once for many copies (see `XMLVerbatim`).
        case verbatim(XMLVerbatim)
        /// A stanza serialized once for many recipients, with the attributes that differ
        /// between them (see `XMLStanzaTemplate`).
        case templated(XMLStanzaTemplate, [XMLAttribute])
    }

    public var attributes: [XMLAttribute] {
        get {
            switch content {
            case .built(let attributes, _): attributes
            case .arena(let arena, let node): arena.attributes(of: node)
            case .verbatim(let verbatim): verbatim.element.attributes
            case .templated(let template, let own): template.element.attributes + own
            }
        }
        _modify {
            var (attributes, children) = takeBuilt()
            defer { content = .built(attributes, children) }
            yield &attributes
        }
    }

    public var children: [XMLNode] {
        get {
            switch content {
            case .built(_, let children): children
            case .arena(let arena, let node): arena.children(of: node)
            case .verbatim(let verbatim): verbatim.element.children
            case .templated(let template, _): template.element.children
            }
        }
        _modify {
            var (attributes, children) = takeBuilt()
            defer { content = .built(attributes, children) }
            yield &children
        }
    }

    public init(
        _ name: String, namespace: String? = nil, attributes: [XMLAttribute] = [],
        children: [XMLNode] = []
    ) {
        self.name = name
        self.namespaceURI = namespace ?? ""
        var children = children
        if let namespace {
            for index in children.indices {
                children[index].inheritNamespace(namespace)
            }
        }
        content = .built(attributes, children)
    }

    /// A view of element `node` of a parsed stanza.
    init(arena: XMLArena, node: Int32) {
        let element = arena.node(Int(node))
        name = arena.string(element.name)
        namespaceURI = element.namespace < 0 ? "" : arena.string(element.namespace)
        content = .arena(arena, node)
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

    // MARK: Forms

    /// Moves the built form out, leaving an empty one behind, so the caller holds the only
    /// reference to the arrays and can change them in place.
    private mutating func takeBuilt() -> ([XMLAttribute], [XMLNode]) {
        switch content {
        case .built(let attributes, let children):
            content = .built([], [])
            return (attributes, children)
        case .arena(let arena, let node):
            return (arena.attributes(of: node), arena.children(of: node))
        case .verbatim(let verbatim):
            return (verbatim.element.attributes, verbatim.element.children)
        case .templated(let template, let own):
            return (template.element.attributes + own, template.element.children)
        }
    }

    mutating func withBuilt<Result>(_ body: (inout [XMLAttribute], inout [XMLNode]) -> Result) -> Result {
        var (attributes, children) = takeBuilt()
        defer { content = .built(attributes, children) }
        return body(&attributes, &children)
    }

    // MARK: Attributes

    /// The value of the attribute with no namespace called `name`.
    public subscript(attribute name: String) -> String? {
        get { attribute(name) }
        set { setAttribute(name, newValue) }
    }

    public func attribute(_ name: String, namespace: String? = nil) -> String? {
        switch content {
        case .built(let attributes, _):
            return Self.value(of: name, namespace: namespace, in: attributes)
        case .arena(let arena, let node):
            return arena.attributeValue(of: node, name: name, namespace: namespace)
        case .verbatim(let verbatim):
            return verbatim.element.attribute(name, namespace: namespace)
        case .templated(let template, let own):
            return Self.value(of: name, namespace: namespace, in: own) ?? template.element.attribute(name, namespace: namespace)
        }
    }

    /// Compares the attributes where they are: a `for … in` copied each one (its three
    /// strings retained and released) to compare its name, and a room's fan-out asks each
    /// copy's `type` (bench/README.md, MUC, fourteenth round).
    private static func value(of name: String, namespace: String?, in attributes: [XMLAttribute]) -> String? {
        for index in attributes.indices where attributes[index].name == name && attributes[index].namespace == namespace {
            return attributes[index].value
        }
        return nil
    }

    /// Sets, replaces or (with `nil`) removes an attribute, keeping the others in order.
    public mutating func setAttribute(_ name: String, _ value: String?, namespace: String? = nil) {
        withBuilt { attributes, _ in
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
    }

    // MARK: Children

    public var elements: [XMLElement] {
        switch content {
        case .built(_, let children):
            children.compactMap { if case .element(let element) = $0 { element } else { nil } }
        case .arena(let arena, let node):
            arena.elements(of: node) { _, _ in true }
        case .verbatim(let verbatim):
            verbatim.element.elements
        case .templated(let template, _):
            template.element.elements
        }
    }

    /// The concatenated character data directly inside this element.
    public var text: String {
        switch content {
        case .built(_, let children):
            var result = ""
            for case .text(let text) in children { result += text }
            return result
        case .arena(let arena, let node):
            return arena.text(of: node)
        case .verbatim(let verbatim):
            return verbatim.element.text
        case .templated(let template, _):
            return template.element.text
        }
    }

    public func firstChild(_ name: String, namespace: String? = nil) -> XMLElement? {
        switch content {
        case .built(_, let children):
            for case .element(let element) in children
            where element.name == name && (namespace == nil || element.namespace == namespace) {
                return element
            }
            return nil
        case .arena(let arena, let node):
            return arena.firstElement(of: node) { arena, child in
                arena.string(child.name, equals: name)
                    && (namespace == nil || arena.string(child.namespace, equals: namespace))
            }
        case .verbatim(let verbatim):
            return verbatim.element.firstChild(name, namespace: namespace)
        case .templated(let template, _):
            return template.element.firstChild(name, namespace: namespace)
        }
    }

    public func children(_ name: String, namespace: String? = nil) -> [XMLElement] {
        switch content {
        case .built, .verbatim, .templated:
            return elements.filter { $0.name == name && (namespace == nil || $0.namespace == namespace) }
        case .arena(let arena, let node):
            return arena.elements(of: node) { arena, child in
                arena.string(child.name, equals: name)
                    && (namespace == nil || arena.string(child.namespace, equals: namespace))
            }
        }
    }

    /// The first child element in `namespace`, whatever its name: how payloads such as
    /// `<query xmlns='jabber:iq:roster'/>` or an error condition are found.
    public func firstChild(inNamespace namespace: String) -> XMLElement? {
        switch content {
        case .built(_, let children):
            for case .element(let element) in children where element.namespace == namespace {
                return element
            }
            return nil
        case .arena(let arena, let node):
            return arena.firstElement(of: node) { arena, child in arena.string(child.namespace, equals: namespace) }
        case .verbatim(let verbatim):
            return verbatim.element.firstChild(inNamespace: namespace)
        case .templated(let template, _):
            return template.element.firstChild(inNamespace: namespace)
        }
    }

    public mutating func append(_ element: XMLElement) {
        let namespace = self.namespace
        withBuilt { _, children in
            children.append(.element(element))
            if let namespace { children[children.count - 1].inheritNamespace(namespace) }
        }
    }

    public mutating func append(text: String) {
        guard !text.isEmpty else { return }
        withBuilt { _, children in children.append(.text(text)) }
    }

    public mutating func removeChildren(where predicate: (XMLElement) -> Bool) {
        withBuilt { _, children in
            children.removeAll { node in
                if case .element(let element) = node { return predicate(element) }
                return false
            }
        }
    }

    /// Gives this element and its unresolved descendants the namespace they are placed in.
    mutating func inheritNamespace(_ parentNamespace: String) {
        guard namespaceURI.isEmpty else { return }
        namespaceURI = parentNamespace
        withBuilt { _, children in
            for index in children.indices { children[index].inheritNamespace(parentNamespace) }
        }
    }
}

extension XMLElement: Hashable {
    public static func == (lhs: XMLElement, rhs: XMLElement) -> Bool {
        guard lhs.name == rhs.name, lhs.namespaceURI == rhs.namespaceURI else { return false }
        if case .arena(let left, let leftNode) = lhs.content, case .arena(let right, let rightNode) = rhs.content,
            left === right, leftNode == rightNode
        {
            return true
        }
        return lhs.attributes == rhs.attributes && lhs.children == rhs.children
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(namespaceURI)
        hasher.combine(attributes)
        hasher.combine(children)
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
