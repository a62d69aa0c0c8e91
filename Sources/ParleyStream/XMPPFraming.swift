import NIOCore
import ParleyCore

/// The text of one XMPP-over-WebSocket message (RFC 7395 §3.3), written the same way by the
/// server's endpoint, the client's transport and BOSH bodies: each message is a document of
/// its own, so every element declares its namespace.
public enum XMPPFraming {
    public static let namespace = "urn:ietf:params:xml:ns:xmpp-framing"

    /// `<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' …/>` with the attributes a TCP
    /// stream header would carry (RFC 7395 §3.4).
    public static func open(_ opening: StreamOpening, allocator: ByteBufferAllocator) -> ByteBuffer {
        var element = XMLElement("open", namespace: namespace)
        if let from = opening.from { element.setAttribute("from", from) }
        if let to = opening.to { element.setAttribute("to", to) }
        if let id = opening.id { element.setAttribute("id", id) }
        if let version = opening.version { element.setAttribute("version", version) }
        if let language = opening.language { element.setAttribute("lang", language, namespace: XMLNamespace.xml) }
        var buffer = allocator.buffer(capacity: 160)
        XMLSerializer.write(element, to: &buffer)
        return buffer
    }

    /// `<close xmlns='urn:ietf:params:xml:ns:xmpp-framing'/>`, with `see-other-uri` when the
    /// client is sent to another endpoint (RFC 7395 §3.6.1).
    public static func close(seeOtherURI: String? = nil, allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: 64)
        guard let seeOtherURI else {
            buffer.writeString("<close xmlns='\(namespace)'/>")
            return buffer
        }
        XMLSerializer.write(XMLElement("close", namespace: namespace, ["see-other-uri": seeOtherURI]), to: &buffer)
        return buffer
    }

    /// Stream-level elements keep the `stream:` prefix they have on TCP (RFC 7395 §3.3.3's
    /// examples; some clients look for `stream:features` by that name).
    public static func serialize(_ element: XMLElement, allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: element.serializedSizeEstimate + 64)
        guard element.namespace == XMLNamespace.streams else {
            XMLSerializer.write(element, to: &buffer)
            return buffer
        }
        var body = allocator.buffer(capacity: element.serializedSizeEstimate + 16)
        XMLSerializer.write(element, to: &body, context: XMLNamespaceContext(prefixes: [XMLNamespace.streams: "stream"]))
        let name = "<stream:\(element.name)"
        body.moveReaderIndex(forwardBy: name.utf8.count)
        buffer.writeString(name)
        buffer.writeString(" xmlns:stream='\(XMLNamespace.streams)'")
        buffer.writeBuffer(&body)
        return buffer
    }
}
