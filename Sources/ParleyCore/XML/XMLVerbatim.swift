/// An element together with its serialization in one namespace context, made once and then
/// copied into many stanzas: the same PEP event goes to hundreds of recipients, and writing
/// its subtree again for each (a string, a retain and a release per node, escaping every
/// text) was a fifth of the server's CPU per notification. The serializer writes the bytes
/// when it meets the element in the same context, and the element itself otherwise; reading
/// the element sees the original, and changing it drops the bytes.
final class XMLVerbatim: Sendable {
    let element: XMLElement
    let bytes: [UInt8]
    let defaultNamespace: String?
    let prefixes: [String: String]

    init(_ element: XMLElement, context: XMLNamespaceContext) {
        self.element = element
        self.defaultNamespace = context.defaultNamespace
        self.prefixes = context.prefixes
        var bytes: [UInt8] = []
        XMLSerializer.write(element, to: &bytes, context: context)
        self.bytes = bytes
    }
}

extension XMLElement {
    /// This element, serialized now for `context` (where it will be written as a child,
    /// such as `.clientStream` for a stanza's payload), so that each copy written in that
    /// context costs a copy of its bytes.
    public func serializedOnce(in context: XMLNamespaceContext) -> XMLElement {
        var copy = self
        copy.content = .verbatim(XMLVerbatim(self, context: context))
        return copy
    }
}
