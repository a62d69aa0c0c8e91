/// UTF-8 enforcement for XMPP streams (RFC 6120 §11.6), done before libxml2 converts anything.
///
/// libxml2 would otherwise switch to whatever encoding the first bytes or the XML declaration
/// suggest, and report conversion failures through its process-wide error channel (stderr),
/// which a peer could use to flood the logs. So the parser runs with `XML_PARSE_IGNORE_ENC`,
/// refuses byte-order marks and NUL-laden starts of other encodings itself, and reads the
/// declared encoding out of the XML declaration libxml2 has already checked.
enum XMLStreamEncoding {
    /// Whether the first bytes of a stream (up to four, as many as have arrived) show an
    /// encoding other than UTF-8: a UTF-16 or UTF-32 byte-order mark, a NUL (UTF-16/32 without
    /// a mark; NUL is never allowed in XML), or EBCDIC's `<?`.
    static func isForeignStart(_ bytes: [UInt8]) -> Bool {
        if bytes.contains(0) { return true }
        guard let first = bytes.first else { return false }
        if first == 0xFE || first == 0xFF { return true }
        if bytes.count >= 2, first == 0x4C, bytes[1] == 0x6F { return true }
        return false
    }

    /// The value of the `encoding` pseudo-attribute in an XML declaration, if there is one.
    /// `declaration` is the start of the stream up to the end of the declaration.
    static func declaredEncoding(in declaration: UnsafeBufferPointer<UInt8>) -> String? {
        let keyword = Array("encoding".utf8)
        guard declaration.count > keyword.count else { return nil }
        var index = 0
        while index + keyword.count <= declaration.count {
            if declaration[index] == keyword[0],
                (0..<keyword.count).allSatisfy({ declaration[index + $0] == keyword[$0] })
            {
                break
            }
            index += 1
        }
        index += keyword.count
        func skipSpace() {
            while index < declaration.count, [0x20, 0x09, 0x0A, 0x0D].contains(declaration[index]) { index += 1 }
        }
        skipSpace()
        guard index < declaration.count, declaration[index] == UInt8(ascii: "=") else { return nil }
        index += 1
        skipSpace()
        guard index < declaration.count else { return nil }
        let quote = declaration[index]
        guard quote == UInt8(ascii: "'") || quote == UInt8(ascii: "\"") else { return nil }
        let start = index + 1
        var end = start
        while end < declaration.count, declaration[end] != quote { end += 1 }
        guard end < declaration.count else { return nil }
        return String(decoding: UnsafeBufferPointer(rebasing: declaration[start..<end]), as: UTF8.self)
    }

    static func isUTF8(_ name: String) -> Bool {
        let lowered = name.lowercased()
        return lowered == "utf-8" || lowered == "utf8"
    }
}
