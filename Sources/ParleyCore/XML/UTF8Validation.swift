/// Strict UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF).
///
/// libxml2 refuses truncated sequences but lets overlong forms through, in character data,
/// CDATA and attribute values alike (the fuzzer found one in CDATA). Parsed stanzas keep the
/// peer's bytes and the serializer writes them out unchanged, so one such sequence would be
/// forwarded to every recipient, whose parser would then end its stream: the parser checks
/// each stanza's values and text itself, in one pass. ASCII is checked a word at a time.
enum UTF8Validation {
    private static let highBits: UInt64 = 0x8080_8080_8080_8080

    static func isValid(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> Bool {
        let raw = UnsafeRawPointer(bytes)
        // Most stanzas are ASCII throughout: whole words, then the last eight bytes as one
        // (overlapping) word, so that no byte-by-byte tail, whose length differs from stanza
        // to stanza, costs a mispredicted branch per byte.
        var index = skipASCIIWords(raw, from: 0, count)
        if count >= 8, index + 8 > count, raw.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self) & highBits == 0 {
            return true
        }
        while index < count {
            let lead = bytes[index]
            if lead < 0x80 {
                index = skipASCIIWords(raw, from: index + 1, count)
                continue
            }
            let length: Int
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0...0xEF: length = 3
            case 0xF0...0xF4: length = 4
            default: return false  // a continuation byte first, an overlong lead, or beyond U+10FFFF
            }
            guard index + length <= count else { return false }
            for offset in 1..<length where bytes[index + offset] & 0xC0 != 0x80 { return false }
            let second = bytes[index + 1]
            switch lead {
            case 0xE0 where second < 0xA0: return false  // overlong
            case 0xED where second >= 0xA0: return false  // UTF-16 surrogates
            case 0xF0 where second < 0x90: return false  // overlong
            case 0xF4 where second >= 0x90: return false  // above U+10FFFF
            default: break
            }
            index = skipASCIIWords(raw, from: index + length, count)
        }
        return true
    }

    /// Past the ASCII from `index` on, thirty-two and then eight bytes at a time; stops at
    /// the word holding the first other byte, or with fewer than eight bytes left.
    @inline(__always)
    private static func skipASCIIWords(_ raw: UnsafeRawPointer, from start: Int, _ count: Int) -> Int {
        var index = start
        while index + 32 <= count,
            (raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                | raw.loadUnaligned(fromByteOffset: index + 8, as: UInt64.self)
                | raw.loadUnaligned(fromByteOffset: index + 16, as: UInt64.self)
                | raw.loadUnaligned(fromByteOffset: index + 24, as: UInt64.self)) & highBits == 0
        {
            index &+= 32
        }
        while index + 8 <= count, raw.loadUnaligned(fromByteOffset: index, as: UInt64.self) & highBits == 0 {
            index &+= 8
        }
        return index
    }
}
