import NIOCore
import ParleyCore
import ParleyStream

/// The `<body/>` of a connection manager's response (XEP-0124 §7–8, XEP-0206): attributes in
/// the order given, then the payloads, each serialized as a document of its own would be
/// (its own namespace declarations; `stream:` kept for features and errors), as on WebSocket.
struct BOSHResponseBody: Sendable {
    var attributes: [(name: String, value: String)] = []
    /// Declares `xmlns:xmpp` for the XEP-0206 attributes.
    var declaresXMPP = false
    var payload = ByteBuffer()

    init(_ attributes: [(name: String, value: String)] = []) {
        self.attributes = attributes
    }

    /// `<body type='terminate' condition='…'/>` (§17.2).
    static func terminate(_ condition: BOSHError.Condition? = nil) -> BOSHResponseBody {
        var body = BOSHResponseBody([("type", "terminate")])
        if let condition { body.attributes.append(("condition", condition.rawValue)) }
        return body
    }

    mutating func append(_ element: XMLElement) {
        var serialized = XMPPFraming.serialize(element, allocator: ByteBufferAllocator())
        payload.writeBuffer(&serialized)
    }

    mutating func append(_ buffer: ByteBuffer) {
        var buffer = buffer
        payload.writeBuffer(&buffer)
    }

    var bytes: ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(payload.readableBytes + 256)
        buffer.writeString("<body xmlns='\(BOSHRequest.namespace)'")
        if declaresXMPP { buffer.writeString(" xmlns:xmpp='\(BOSHRequest.xmppNamespace)'") }
        // Prosody's and ejabberd's answers declare it: clients written against them look
        // stream features up by the prefixed name.
        buffer.writeString(" xmlns:stream='\(XMLNamespace.streams)'")
        for attribute in attributes {
            buffer.writeString(" \(attribute.name)='")
            buffer.writeString(Self.escape(attribute.value))
            buffer.writeString("'")
        }
        if payload.readableBytes == 0 {
            buffer.writeString("/>")
        } else {
            buffer.writeString(">")
            var payload = payload
            buffer.writeBuffer(&payload)
            buffer.writeString("</body>")
        }
        return buffer
    }

    private static func escape(_ text: String) -> String {
        guard text.contains(where: { "&<'\"".contains($0) }) else { return text }
        return text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: "'", with: "&apos;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
