/// Base64 (RFC 4648 §4, standard alphabet, with padding) as SASL uses it. Decoding is strict,
/// because RFC 6120 §6.4.2 requires a receiver to reject anything else with
/// `<incorrect-encoding/>`: no whitespace, no line breaks, no URL-safe alphabet, padding only at
/// the end and only as much as needed, and unused trailing bits must be zero (so every byte
/// string has exactly one accepted encoding).
public enum Base64 {
    public enum DecodingError: Error, Sendable, Hashable {
        /// The length is not a multiple of four.
        case invalidLength(Int)
        /// A byte outside the alphabet (or `=` where padding may not be) at this offset.
        case invalidCharacter(offset: Int)
        /// The last symbol carries bits that the padding says are unused.
        case nonCanonicalPadding
    }

    private static let alphabet: [UInt8] = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// 0...63 for alphabet bytes, 0xFF for everything else.
    private static let decodeTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(value) }
        return table
    }()

    public static func encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index + 3 <= bytes.count {
            let group = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            output.append(alphabet[Int(group >> 18 & 0x3F)])
            output.append(alphabet[Int(group >> 12 & 0x3F)])
            output.append(alphabet[Int(group >> 6 & 0x3F)])
            output.append(alphabet[Int(group & 0x3F)])
            index += 3
        }
        switch bytes.count - index {
        case 1:
            let group = UInt32(bytes[index]) << 16
            output.append(alphabet[Int(group >> 18 & 0x3F)])
            output.append(alphabet[Int(group >> 12 & 0x3F)])
            output.append(UInt8(ascii: "="))
            output.append(UInt8(ascii: "="))
        case 2:
            let group = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            output.append(alphabet[Int(group >> 18 & 0x3F)])
            output.append(alphabet[Int(group >> 12 & 0x3F)])
            output.append(alphabet[Int(group >> 6 & 0x3F)])
            output.append(UInt8(ascii: "="))
        default:
            break
        }
        return String(decoding: output, as: UTF8.self)
    }

    public static func decode(_ string: some StringProtocol) throws(DecodingError) -> [UInt8] {
        try decode(bytes: Array(string.utf8))
    }

    public static func decode(bytes input: [UInt8]) throws(DecodingError) -> [UInt8] {
        guard input.count % 4 == 0 else { throw .invalidLength(input.count) }
        var padding = 0
        if input.last == UInt8(ascii: "=") { padding += 1 }
        if input.count >= 2, input[input.count - 2] == UInt8(ascii: "=") { padding += 1 }
        // "A===" would make padding 3 were it counted on; the loop below rejects it as a stray "=".
        var output: [UInt8] = []
        output.reserveCapacity(input.count / 4 * 3)
        var offset = 0
        while offset < input.count {
            let isLast = offset + 4 == input.count
            let symbols = isLast ? 4 - padding : 4
            var group: UInt32 = 0
            for position in 0..<4 {
                let byte = input[offset + position]
                if position < symbols {
                    let value = decodeTable[Int(byte)]
                    guard value != 0xFF else { throw .invalidCharacter(offset: offset + position) }
                    group = group << 6 | UInt32(value)
                } else {
                    group <<= 6  // a padding position, already known to be "="
                }
            }
            output.append(UInt8(truncatingIfNeeded: group >> 16))
            if symbols >= 3 { output.append(UInt8(truncatingIfNeeded: group >> 8)) }
            if symbols == 4 { output.append(UInt8(truncatingIfNeeded: group)) }
            if isLast {
                let unusedBits: UInt32 = symbols == 2 ? 0xFFFF : symbols == 3 ? 0xFF : 0
                guard group & unusedBits == 0 else { throw .nonCanonicalPadding }
            }
            offset += 4
        }
        return output
    }
}
