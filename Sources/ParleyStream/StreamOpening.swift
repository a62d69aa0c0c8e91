import ParleyCore

/// The attributes of the `<stream:stream>` start tag one side sends (RFC 6120 §4.7).
public struct StreamOpening: Sendable, Hashable {
    public var from: String?
    public var to: String?
    public var id: String?
    public var version: String?
    public var language: String?
    /// The content namespace: `jabber:client` for client-to-server streams.
    public var contentNamespace: String

    public init(
        from: String? = nil, to: String? = nil, id: String? = nil, version: String? = "1.0",
        language: String? = "en", contentNamespace: String = XMLNamespace.client
    ) {
        self.from = from
        self.to = to
        self.id = id
        self.version = version
        self.language = language
        self.contentNamespace = contentNamespace
    }

    /// `<?xml version='1.0'?><stream:stream …>`, the form every XMPP peer accepts.
    public func write<Sink: XMLByteSink>(to sink: inout Sink) {
        sink.writeUTF8(StaticString("<?xml version='1.0'?>").rawBytes)
        var attributes: [XMLAttribute] = []
        if let from { attributes.append(XMLAttribute("from", from)) }
        if let to { attributes.append(XMLAttribute("to", to)) }
        if let id { attributes.append(XMLAttribute("id", id)) }
        if let version { attributes.append(XMLAttribute("version", version)) }
        if let language { attributes.append(XMLAttribute("lang", language, namespace: XMLNamespace.xml)) }
        XMLSerializer.writeOpenTag(
            prefixedName: "stream:stream",
            declarations: [("", contentNamespace), ("stream", XMLNamespace.streams)],
            attributes: attributes, to: &sink)
    }

    /// The namespaces in force for stanzas written inside this stream.
    public var namespaceContext: XMLNamespaceContext {
        // The shared value for client streams: a dictionary of its own would be kept by
        // every connection's encoder.
        if contentNamespace == XMLNamespace.client { return .clientStream }
        return XMLNamespaceContext(defaultNamespace: contentNamespace, prefixes: [XMLNamespace.streams: "stream"])
    }
}

extension StaticString {
    var rawBytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: utf8Start, count: utf8CodeUnitCount)
    }
}
