/// Where serialized XML goes: a `[UInt8]`, or (in ParleyStream) a NIO `ByteBuffer`, so outgoing
/// stanzas are written straight into the socket's buffer. Not a `String`: appending each
/// fragment (a name, an attribute value, a `'`) to one made a String of each; `xmlString()`
/// writes bytes and decodes them once (for the archive's copy of each message that was 4 % of
/// the server's CPU, bench/README.md, issue 17, "Ninth round").
public protocol XMLByteSink {
    mutating func writeUTF8(_ bytes: UnsafeRawBufferPointer)
}

extension Array: XMLByteSink where Element == UInt8 {
    public mutating func writeUTF8(_ bytes: UnsafeRawBufferPointer) { append(contentsOf: bytes) }
}

/// The namespaces in force where an element is written: the default namespace (`xmlns`) and
/// prefixed ones (`xmlns:stream`). A stanza written inside a `jabber:client` stream carries no
/// namespace declaration of its own; its payloads declare theirs once, as XMPP peers expect.
public struct XMLNamespaceContext: Sendable {
    public var defaultNamespace: String?
    /// Namespace URI → prefix.
    public var prefixes: [String: String]

    public init(defaultNamespace: String? = nil, prefixes: [String: String] = [:]) {
        self.defaultNamespace = defaultNamespace
        self.prefixes = prefixes
    }

    /// The context inside a c2s stream: `jabber:client` by default, `stream:` bound.
    public static let clientStream = XMLNamespaceContext(
        defaultNamespace: XMLNamespace.client, prefixes: [XMLNamespace.streams: "stream"])
}

public enum XMLSerializer {
    public static func write<Sink: XMLByteSink>(
        _ element: XMLElement, to sink: inout Sink, context: XMLNamespaceContext = .init()
    ) {
        writeElement(element, to: &sink, defaultNamespace: context.defaultNamespace, prefixes: context.prefixes)
    }

    /// Writes the start tag of an element that stays open, such as `<stream:stream …>`.
    /// Declarations listed in `declarations` (prefix → URI, "" for the default) are written
    /// as given; the caller owns the context of what follows.
    public static func writeOpenTag<Sink: XMLByteSink>(
        prefixedName: String, declarations: [(prefix: String, uri: String)],
        attributes: [XMLAttribute], to sink: inout Sink
    ) {
        sink.write("<")
        sink.write(prefixedName)
        for declaration in declarations {
            sink.write(declaration.prefix.isEmpty ? " xmlns='" : " xmlns:")
            if !declaration.prefix.isEmpty {
                sink.write(declaration.prefix)
                sink.write("='")
            }
            writeEscaped(declaration.uri, to: &sink, inAttribute: true)
            sink.write("'")
        }
        var generatedPrefix = 0
        for attribute in attributes { writeAttribute(attribute, to: &sink, prefixes: [:], generatedPrefix: &generatedPrefix) }
        sink.write(">")
    }

    private static func writeElement<Sink: XMLByteSink>(
        _ element: XMLElement, to sink: inout Sink, defaultNamespace: String?,
        prefixes: [String: String]
    ) {
        if case .verbatim(let verbatim) = element.content {
            if verbatim.defaultNamespace == defaultNamespace, verbatim.prefixes == prefixes {
                verbatim.bytes.withUnsafeBytes { sink.writeUTF8($0) }
            } else {
                writeElement(verbatim.element, to: &sink, defaultNamespace: defaultNamespace, prefixes: prefixes)
            }
            return
        }
        if case .templated(let template, let own) = element.content {
            if template.defaultNamespace == defaultNamespace, template.prefixes == prefixes {
                template.head.withUnsafeBytes { sink.writeUTF8($0) }
                var generatedPrefix = 0
                for attribute in own { writeAttribute(attribute, to: &sink, prefixes: prefixes, generatedPrefix: &generatedPrefix) }
                template.tail.withUnsafeBytes { sink.writeUTF8($0) }
            } else {
                var plain = template.element
                for attribute in own { plain.setAttribute(attribute.name, attribute.value, namespace: attribute.namespace) }
                writeElement(plain, to: &sink, defaultNamespace: defaultNamespace, prefixes: prefixes)
            }
            return
        }
        var childDefault = defaultNamespace
        var declaresDefault = false
        var prefix: String? = nil
        if let namespace = element.namespace, namespace != defaultNamespace {
            if let bound = prefixes[namespace] {
                prefix = bound
            } else {
                childDefault = namespace
                declaresDefault = true
            }
        }
        sink.write("<")
        if let prefix {
            sink.write(prefix)
            sink.write(":")
        }
        sink.write(element.name)
        if declaresDefault {
            sink.write(" xmlns='")
            writeEscaped(childDefault ?? "", to: &sink, inAttribute: true)
            sink.write("'")
        }
        var generatedPrefix = 0
        let hasChildren: Bool
        switch element.content {
        case .built(let attributes, let children):
            for attribute in attributes {
                writeAttribute(attribute, to: &sink, prefixes: prefixes, generatedPrefix: &generatedPrefix)
            }
            hasChildren = !children.isEmpty
            if hasChildren {
                sink.write(">")
                for child in children {
                    switch child {
                    case .text(let text):
                        writeEscaped(text, to: &sink, inAttribute: false)
                    case .element(let child):
                        writeElement(child, to: &sink, defaultNamespace: childDefault, prefixes: prefixes)
                    }
                }
            }
        case .verbatim, .templated:
            preconditionFailure("written above")
        case .arena(let arena, let index):
            // A parsed element: its bytes go out straight from the arena, no Strings made.
            let node = arena.node(Int(index))
            for attributeIndex in Int(node.start)..<Int(node.start + node.count) {
                let attribute = arena.attribute(attributeIndex)
                writeAttribute(
                    arena.string(attribute.name), arena.optionalString(attribute.namespace),
                    arena.bytes(attribute.valueStart, attribute.valueCount), to: &sink, prefixes: prefixes,
                    generatedPrefix: &generatedPrefix)
            }
            hasChildren = node.childCount > 0
            if hasChildren {
                sink.write(">")
                var child = index + 1
                for _ in 0..<node.childCount {
                    let childNode = arena.node(Int(child))
                    if childNode.isText {
                        writeEscaped(arena.bytes(childNode.start, childNode.count), to: &sink, inAttribute: false)
                    } else {
                        writeElement(
                            XMLElement(arena: arena, node: child), to: &sink, defaultNamespace: childDefault,
                            prefixes: prefixes)
                    }
                    child = childNode.end
                }
            }
        }
        if !hasChildren {
            sink.write("/>")
            return
        }
        sink.write("</")
        if let prefix {
            sink.write(prefix)
            sink.write(":")
        }
        sink.write(element.name)
        sink.write(">")
    }

    private static func writeAttribute<Sink: XMLByteSink>(
        _ attribute: XMLAttribute, to sink: inout Sink, prefixes: [String: String], generatedPrefix: inout Int
    ) {
        var value = attribute.value
        value.withUTF8 { value in
            writeAttribute(
                attribute.name, attribute.namespace, value, to: &sink, prefixes: prefixes, generatedPrefix: &generatedPrefix)
        }
    }

    /// An attribute of an element in a stanza, from either form of `XMLElement`; a namespace
    /// with no prefix in scope gets one declared right there.
    private static func writeAttribute<Sink: XMLByteSink>(
        _ name: String, _ namespace: String?, _ value: UnsafeBufferPointer<UInt8>, to sink: inout Sink,
        prefixes: [String: String], generatedPrefix: inout Int
    ) {
        sink.write(" ")
        if let namespace {
            if namespace != XMLNamespace.xml, prefixes[namespace] == nil {
                // A rare foreign-namespace attribute: declare a private prefix right here.
                let prefix = "ns\(generatedPrefix)"
                generatedPrefix += 1
                sink.write("xmlns:")
                sink.write(prefix)
                sink.write("='")
                writeEscaped(namespace, to: &sink, inAttribute: true)
                sink.write("' ")
                sink.write(prefix)
            } else {
                sink.write(namespace == XMLNamespace.xml ? "xml" : prefixes[namespace].unsafelyUnwrapped)
            }
            sink.write(":")
        }
        sink.write(name)
        sink.write("='")
        writeEscaped(value, to: &sink, inAttribute: true)
        sink.write("'")
    }

    /// Escapes markup characters, and drops the C0 controls XML 1.0 cannot carry at all (a
    /// peer would have to close the stream on them). In attributes, whitespace other than the
    /// space is written as a character reference so attribute normalisation keeps it.
    static func writeEscaped<Sink: XMLByteSink>(_ string: String, to sink: inout Sink, inAttribute: Bool) {
        var string = string
        string.withUTF8 { writeEscaped($0, to: &sink, inAttribute: inAttribute) }
    }

    static func writeEscaped<Sink: XMLByteSink>(
        _ utf8: UnsafeBufferPointer<UInt8>, to sink: inout Sink, inAttribute: Bool
    ) {
        var runStart = 0
        for index in 0..<utf8.count {
            let byte = utf8[index]
            let replacement: StaticString?
            switch byte {
            case UInt8(ascii: "&"): replacement = "&amp;"
            case UInt8(ascii: "<"): replacement = "&lt;"
            case UInt8(ascii: ">"): replacement = "&gt;"
            case UInt8(ascii: "'") where inAttribute: replacement = "&apos;"
            case UInt8(ascii: "\"") where inAttribute: replacement = "&quot;"
            case 0x0D: replacement = "&#13;"
            case 0x0A where inAttribute: replacement = "&#10;"
            case 0x09 where inAttribute: replacement = "&#9;"
            case 0x09, 0x0A: continue
            case 0x00..<0x20: replacement = ""
            default: continue
            }
            if runStart < index {
                sink.writeUTF8(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: utf8[runStart..<index])))
            }
            if let replacement, replacement.utf8CodeUnitCount > 0 {
                sink.writeUTF8(UnsafeRawBufferPointer(start: replacement.utf8Start, count: replacement.utf8CodeUnitCount))
            }
            runStart = index + 1
        }
        if runStart < utf8.count {
            sink.writeUTF8(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: utf8[runStart..<utf8.count])))
        }
    }
}

extension XMLByteSink {
    @inline(__always)
    mutating func write(_ literal: StaticString) {
        writeUTF8(UnsafeRawBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    @inline(__always)
    mutating func write(_ string: String) {
        var string = string
        string.withUTF8 { writeUTF8(UnsafeRawBufferPointer($0)) }
    }
}

extension XMLElement: CustomStringConvertible {
    /// The element as XML, declaring its own namespace: for logs and tests.
    public var description: String { xmlString() }

    public func xmlString(context: XMLNamespaceContext = .init()) -> String {
        String(decoding: xmlBytes(context: context), as: UTF8.self)
    }

    public func xmlBytes(context: XMLNamespaceContext = .init()) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(256)
        XMLSerializer.write(self, to: &output, context: context)
        return output
    }
}
