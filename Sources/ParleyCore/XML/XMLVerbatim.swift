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

    convenience init(_ element: XMLElement, context: XMLNamespaceContext) {
        var bytes: [UInt8] = []
        XMLSerializer.write(element, to: &bytes, context: context)
        self.init(element, bytes: bytes, context: context)
    }

    /// `element` with bytes already known to be its serialization in `context`.
    init(_ element: XMLElement, bytes: [UInt8], context: XMLNamespaceContext) {
        self.element = element
        self.bytes = bytes
        self.defaultNamespace = context.defaultNamespace
        self.prefixes = context.prefixes
    }

    /// The context the bytes were written for.
    var context: XMLNamespaceContext { XMLNamespaceContext(defaultNamespace: defaultNamespace, prefixes: prefixes) }
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

    /// The bytes `serializedOnce(in:)` made, when this element has them for `context`.
    public func serializedBytes(in context: XMLNamespaceContext) -> [UInt8]? {
        guard case .verbatim(let verbatim) = content, verbatim.defaultNamespace == context.defaultNamespace,
            verbatim.prefixes == context.prefixes
        else { return nil }
        return verbatim.bytes
    }

    /// This element with `child` appended, still serialized once: the child is written into
    /// the kept bytes before the end tag. A message gets the recipient's stanza-id after the
    /// archive serialized it, and its delivery then writes bytes instead of the tree again
    /// (which cost as much as the rest of the delivery). Without kept bytes, or when they do
    /// not end in a plain end tag of this element, it is a plain `append`.
    public func appendingKeepingSerialization(_ child: XMLElement) -> XMLElement {
        func plainAppend() -> XMLElement {
            var result = self
            result.append(child)
            return result
        }
        guard case .verbatim(let verbatim) = content,
            // Declaring a namespace of its own would make it the children's default.
            namespace == nil || namespace == verbatim.defaultNamespace
        else { return plainAppend() }
        let kept = verbatim.bytes
        // `</name>`: the end tag of an element written without a prefix.
        let endTag = kept.suffix(name.utf8.count + 3)
        guard kept.count > endTag.count, endTag.starts(with: "</".utf8), endTag.dropFirst(2).dropLast().elementsEqual(name.utf8),
            endTag.last == UInt8(ascii: ">")
        else { return plainAppend() }
        var element = verbatim.element
        element.append(child)
        guard case .element(let appended)? = element.children.last else { return plainAppend() }
        let context = verbatim.context
        var bytes: [UInt8] = []
        bytes.reserveCapacity(kept.count + 128)
        bytes.append(contentsOf: kept[..<endTag.startIndex])
        XMLSerializer.write(appended, to: &bytes, context: context)
        bytes.append(contentsOf: endTag)
        var result = self
        result.content = .verbatim(XMLVerbatim(element, bytes: bytes, context: context))
        return result
    }
}
