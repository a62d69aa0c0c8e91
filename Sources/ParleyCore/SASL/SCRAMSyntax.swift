/// The lexical layer of SCRAM messages (RFC 5802 §7) shared by client and server: attribute
/// lists, `saslname` escaping, nonces and numbers. Everything returns nil on bad input and lets
/// the caller pick the error its side reports.
enum SCRAMSyntax {
    /// No legitimate SCRAM message comes near this; the cap bounds the work a peer can cause.
    static let maximumMessageLength = 8192

    /// The message as text, if it is valid UTF-8 without NUL (no SCRAM production allows NUL)
    /// and not absurdly long.
    static func text(_ bytes: [UInt8]) -> String? {
        guard bytes.count <= maximumMessageLength, !bytes.contains(0) else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }

    /// Splits `a=1,b=2` into its attributes. Each must be one ASCII letter, `=`, and a value
    /// without commas (commas cannot occur in values; saslnames escape them).
    static func attributes(_ text: Substring) -> [(name: Character, value: Substring)]? {
        var result: [(name: Character, value: Substring)] = []
        for field in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard let name = field.first, name.isASCII, name.isLetter,
                field.dropFirst().first == "="
            else { return nil }
            result.append((name, field.dropFirst(2)))
        }
        return result
    }

    /// `saslname` encoding: `,` and `=` would be read as syntax, so they travel as `=2C` / `=3D`.
    static func escape(_ name: String) -> String {
        var result = ""
        result.reserveCapacity(name.utf8.count)
        for character in name.unicodeScalars {
            switch character {
            case ",": result += "=2C"
            case "=": result += "=3D"
            default: result.unicodeScalars.append(character)
            }
        }
        return result
    }

    /// Decodes a `saslname`; nil when it is empty or has an `=` not starting `=2C` / `=3D`
    /// (RFC 5802 §5.1: the server MUST fail such a message).
    static func unescape(_ value: Substring) -> String? {
        guard !value.isEmpty else { return nil }
        var result = ""
        var scalars = value.unicodeScalars[...]
        while let scalar = scalars.popFirst() {
            guard scalar == "=" else {
                result.unicodeScalars.append(scalar)
                continue
            }
            let code = String(scalars.prefix(2))
            scalars = scalars.dropFirst(2)
            switch code {
            case "2C": result += ","
            case "3D": result += "="
            default: return nil
            }
        }
        return result
    }

    /// `printable = %x21-2B / %x2D-7E` (RFC 5802 §7): nonces are visible ASCII without comma.
    static func isValidNonce(_ nonce: Substring) -> Bool {
        !nonce.isEmpty && nonce.utf8.allSatisfy { (0x21...0x7E).contains($0) && $0 != UInt8(ascii: ",") }
    }

    /// `posit-number = %x31-39 *DIGIT`: no sign, no leading zero, and it must fit an Int.
    static func positiveNumber(_ value: Substring) -> Int? {
        guard let first = value.utf8.first, (UInt8(ascii: "1")...UInt8(ascii: "9")).contains(first),
            value.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        else { return nil }
        return Int(value)
    }
}

/// Nonce generation for SCRAM; injectable so tests can replay the RFC examples byte for byte.
public enum SCRAMNonce {
    public typealias Generator = @Sendable () throws(CryptoError) -> String

    /// 18 random bytes in base64: 24 printable characters, none of them a comma, 144 bits.
    public static let random: Generator = { () throws(CryptoError) in
        Base64.encode(try SecureRandom.bytes(18))
    }

    /// A generator that always returns `nonce`; for tests only.
    public static func fixed(_ nonce: String) -> Generator {
        { () throws(CryptoError) in nonce }
    }
}
