import NIOCore

/// Reads a room's presence and groupchat messages straight from the bytes, before the XML
/// decoder, for the MUC benchmark's occupants.
///
/// Filling a room of N occupants sends about N² presence stanzas (each newcomer gets everyone's,
/// and everyone gets the newcomer's): a million for 1,000 occupants. Parsing each into a tree
/// (libxml2 and the element builder, several µs each) would make the load generator, not the
/// server, what the join time measures. The server's stanzas are well-formed XML, so a top-level
/// element ends where the depth returns to zero; the few values the benchmark needs (`from`,
/// `type`, status codes, the body) are read from those bytes. Every other stanza (iq, errors,
/// messages without a body) goes on to the decoder, which then sees a well-formed stream with
/// those stanzas taken out.
///
/// Inactive (everything passed on) until `activate()`, which the occupant calls when it
/// enters the room: by then the login's stanzas are all decoded, so the bytes that follow
/// begin at a stanza boundary.
final class MUCStanzaSkimmer: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    enum Skimmed {
        case presence(from: String, type: String?, statusCodes: [Substring])
        case groupchat(from: String, body: String)
    }

    private var active = false
    private var pending: [UInt8] = []
    private let deliver: (Skimmed) -> Void

    init(deliver: @escaping (Skimmed) -> Void) { self.deliver = deliver }

    func activate() { active = true }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard active else { return context.fireChannelRead(data) }
        var buffer = unwrapInboundIn(data)
        pending += buffer.readBytes(length: buffer.readableBytes) ?? []
        var start = 0
        var passOn: [UInt8] = []
        while start < pending.count {
            if pending[start] != UInt8(ascii: "<") {
                start += 1  // whitespace between stanzas
                continue
            }
            if start + 1 < pending.count, pending[start + 1] == UInt8(ascii: "/") {
                // The stream's end: the decoder handles it and whatever follows.
                active = false
                passOn += pending[start...]
                start = pending.count
                break
            }
            guard let end = Self.elementEnd(pending, from: start) else { break }
            if let skimmed = Self.skim(pending[start..<end]) {
                deliver(skimmed)
            } else {
                passOn += pending[start..<end]
            }
            start = end
        }
        pending.removeFirst(start)
        if !passOn.isEmpty {
            context.fireChannelRead(wrapInboundOut(context.channel.allocator.buffer(bytes: passOn)))
        }
    }

    /// The index after the top-level element starting at `start`, or nil if it is incomplete.
    static func elementEnd(_ bytes: [UInt8], from start: Int) -> Int? {
        var depth = 0
        var index = start
        let count = bytes.count
        while index < count {
            guard bytes[index] == UInt8(ascii: "<") else {
                index += 1
                continue
            }
            let closing = index + 1 < count && bytes[index + 1] == UInt8(ascii: "/")
            // To the tag's '>', skipping quoted attribute values.
            var quote: UInt8 = 0
            var cursor = index + 1
            while cursor < count {
                let byte = bytes[cursor]
                if quote != 0 {
                    if byte == quote { quote = 0 }
                } else if byte == UInt8(ascii: "'") || byte == UInt8(ascii: "\"") {
                    quote = byte
                } else if byte == UInt8(ascii: ">") {
                    break
                }
                cursor += 1
            }
            guard cursor < count else { return nil }
            if closing {
                depth -= 1
            } else if bytes[cursor - 1] != UInt8(ascii: "/") {
                depth += 1
            }
            index = cursor + 1
            if depth == 0 { return index }
        }
        return nil
    }

    /// Room presence, or a groupchat message with a body; nil for anything the decoder must see.
    static func skim(_ element: ArraySlice<UInt8>) -> Skimmed? {
        guard let tagEnd = element.firstIndex(of: UInt8(ascii: ">")) else { return nil }
        let tag = element[element.startIndex..<tagEnd]
        let type = attribute("type", in: tag)
        if type == "error" { return nil }
        if startsWith(tag, "<presence") {
            guard let from = attribute("from", in: tag) else { return nil }
            var codes: [Substring] = []
            var rest = element[tagEnd...]
            while let found = find(rest, "<status ") {
                let statusEnd = rest[found...].firstIndex(of: UInt8(ascii: ">")) ?? rest.endIndex
                if let code = attribute("code", in: rest[found..<statusEnd]) { codes.append(Substring(code)) }
                rest = rest[statusEnd...]
            }
            return .presence(from: from, type: type, statusCodes: codes)
        }
        if startsWith(tag, "<message"), type == "groupchat", let from = attribute("from", in: tag),
            let open = find(element, "<body>")
        {
            let textStart = open + 6
            guard let close = find(element[textStart...], "</body>") else { return nil }
            return .groupchat(from: from, body: String(decoding: element[textStart..<close], as: UTF8.self))
        }
        return nil
    }

    /// The value of attribute `name` in a start tag (either quote; the benchmark's values hold
    /// no entities).
    static func attribute(_ name: String, in tag: ArraySlice<UInt8>) -> String? {
        let key = Array(" \(name)=".utf8)
        guard let found = find(tag, key) else { return nil }
        let quoteIndex = found + key.count
        guard quoteIndex < tag.endIndex else { return nil }
        let quote = tag[quoteIndex]
        guard let close = tag[(quoteIndex + 1)...].firstIndex(of: quote) else { return nil }
        return String(decoding: tag[(quoteIndex + 1)..<close], as: UTF8.self)
    }

    private static func startsWith(_ bytes: ArraySlice<UInt8>, _ prefix: String) -> Bool {
        let prefix = Array(prefix.utf8)
        guard bytes.count > prefix.count else { return false }
        let next = bytes[bytes.startIndex + prefix.count]
        return bytes.prefix(prefix.count).elementsEqual(prefix)
            && (next == UInt8(ascii: " ") || next == UInt8(ascii: ">") || next == UInt8(ascii: "/"))
    }

    private static func find(_ bytes: ArraySlice<UInt8>, _ needle: String) -> Int? {
        find(bytes, Array(needle.utf8))
    }

    private static func find(_ bytes: ArraySlice<UInt8>, _ needle: [UInt8]) -> Int? {
        guard let first = needle.first, bytes.count >= needle.count else { return nil }
        var index = bytes.startIndex
        let last = bytes.endIndex - needle.count
        while index <= last {
            if bytes[index] == first, bytes[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }
}
