/// One stanza for many recipients that differ only in a few attributes (`to`, `id`): a PEP
/// notification goes to hundreds of contacts' resources. The rest is serialized once, split
/// around the place where those attributes go; each recipient's copy is the template and its
/// own attributes, written as the shared start of the start tag, those attributes, and the
/// shared rest. Building each copy as an element of its own (a new attribute list, the
/// envelope written and escaped again) was a large share of a notification's cost.
///
/// A copy reads as the full element (the template's attributes, then its own); changing it
/// turns it into a plain element. Written in another namespace context than the one it
/// was made for, it is written as a plain element.
public final class XMLStanzaTemplate: Sendable {
    /// The stanza without the recipients' attributes.
    let element: XMLElement
    /// `<name` and the template's attributes (with a namespace declaration if it needs one).
    let head: [UInt8]
    /// The end of the start tag, the content and the end tag (or `/>`).
    let tail: [UInt8]
    let defaultNamespace: String?
    let prefixes: [String: String]

    public init(_ element: XMLElement, context: XMLNamespaceContext) {
        self.element = element
        self.defaultNamespace = context.defaultNamespace
        self.prefixes = context.prefixes
        var bytes: [UInt8] = []
        XMLSerializer.write(element, to: &bytes, context: context)
        // The start tag ends at the first '>': the serializer escapes it in attribute values.
        var split = bytes.firstIndex(of: UInt8(ascii: ">")) ?? bytes.count
        if split > 0, bytes[split - 1] == UInt8(ascii: "/") { split -= 1 }
        self.head = Array(bytes[..<split])
        self.tail = Array(bytes[split...])
    }

    /// The stanza with `attributes` added after the template's own (none of which they
    /// may repeat).
    public func instance(_ attributes: [XMLAttribute]) -> XMLElement {
        var copy = element
        copy.content = .templated(self, attributes)
        return copy
    }

    /// Bytes of one copy, but for its own attributes.
    var byteCount: Int { head.count + tail.count }
}
