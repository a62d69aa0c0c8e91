extension XMLElement {
    /// About how many bytes this element takes serialized, found without walking it: the
    /// stream encoder sizes each stanza's buffer with it, since a buffer that must grow while
    /// the stanza is written is allocated twice and copied (a PEP notification, some 600
    /// bytes, outgrew the fixed 512 every time). Exact for parts serialized once
    /// (`serializedOnce(in:)`); a parsed stanza's text and attribute values plus some markup
    /// per node; for a built element, its attributes and direct children.
    public var serializedSizeEstimate: Int {
        switch content {
        case .verbatim(let verbatim):
            return verbatim.bytes.count
        case .templated(let template, let own):
            var size = template.byteCount
            for attribute in own { size += attribute.name.utf8.count + attribute.value.utf8.count + 4 }
            return size
        case .arena(let arena, _):
            let header = arena.header
            // The whole stanza's bytes: a child of it is over-estimated, which costs nothing.
            return header.byteCount + 24 * header.nodeCount + 24 * header.attributeCount
        case .built(let attributes, let children):
            var size = 2 * name.utf8.count + 16
            for attribute in attributes { size += attribute.name.utf8.count + attribute.value.utf8.count + 4 }
            for child in children {
                switch child {
                case .text(let text): size += text.utf8.count
                case .element(let element):
                    if case .verbatim(let verbatim) = element.content {
                        size += verbatim.bytes.count
                    } else {
                        size += 2 * element.name.utf8.count + 64
                    }
                }
            }
            return size
        }
    }
}
