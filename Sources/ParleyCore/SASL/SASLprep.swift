import Foundation  // only for NFKC, which the standard library does not expose

/// SASLprep (RFC 4013), the stringprep profile SCRAM and PLAIN apply to passwords.
///
/// Implemented subset, and why it is enough for passwords:
/// - Mapping (RFC 4013 §2.1): non-ASCII spaces (RFC 3454 table C.1.2) become U+0020; the
///   "commonly mapped to nothing" characters (table B.1) are removed.
/// - Normalization (§2.2): Unicode NFKC, using the platform's current Unicode tables rather than
///   stringprep's frozen Unicode 3.2 ones. The two differ only for characters assigned or
///   changed since 3.2, which a password is vanishingly unlikely to contain.
/// - Prohibited output (§2.3): tables C.1.2 (after mapping, so none remain), C.2.1/C.2.2 control
///   characters, C.3 private use, C.4 non-characters, C.5 surrogates (impossible in a Swift
///   String), C.6/C.7 inappropriate for plain text or canonical representation, C.8 display
///   property changers, and C.9 tagging characters are rejected.
/// - Not implemented: the bidirectional-text check (§2.4, RFC 3454 §6), which needs the bidi
///   class of every character and only rejects strings mixing right-to-left and left-to-right
///   text; and the unassigned-code-point check, i.e. every string is treated as a "query"
///   (RFC 3454 §7). Both are lenient in the accepting direction: the same password still
///   prepares to the same string on the client and the server.
public enum SASLprep {
    public enum Error: Swift.Error, Sendable, Hashable {
        case prohibitedCharacter(Unicode.Scalar)
    }

    public static func prepare(_ string: String) throws(SASLprep.Error) -> String {
        var mapped = String.UnicodeScalarView()
        var isASCII = true
        for scalar in string.unicodeScalars {
            if isNonASCIISpace(scalar) {
                mapped.append(" ")
            } else if !isMappedToNothing(scalar) {
                mapped.append(scalar)
                if !scalar.isASCII { isASCII = false }
            }
        }
        // ASCII is already in NFKC; skipping Foundation keeps the common case cheap.
        let normalized = isASCII ? String(mapped) : String(mapped).precomposedStringWithCompatibilityMapping
        for scalar in normalized.unicodeScalars where isProhibited(scalar) {
            throw .prohibitedCharacter(scalar)
        }
        return normalized
    }

    /// RFC 3454 table C.1.2.
    static func isNonASCIISpace(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00A0, 0x1680, 0x2000...0x200B, 0x202F, 0x205F, 0x3000: true
        default: false
        }
    }

    /// RFC 3454 table B.1.
    static func isMappedToNothing(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00AD, 0x034F, 0x1806, 0x180B...0x180D, 0x200B...0x200D, 0x2060, 0xFE00...0xFE0F, 0xFEFF:
            true
        default: false
        }
    }

    /// RFC 3454 tables C.1.2 and C.2 through C.9, as RFC 4013 §2.3 lists them.
    static func isProhibited(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        if isNonASCIISpace(scalar) { return true }
        switch value {
        case 0x0000...0x001F, 0x007F: return true  // C.2.1
        case 0x0080...0x009F, 0x06DD, 0x070F, 0x180E, 0x200C, 0x200D, 0x2028, 0x2029,
            0x2060...0x2063, 0x206A...0x206F, 0xFEFF, 0xFFF9...0xFFFC, 0x1D173...0x1D17A:
            return true  // C.2.2
        case 0xE000...0xF8FF, 0xF0000...0xFFFFD, 0x100000...0x10FFFD: return true  // C.3
        case 0xFDD0...0xFDEF: return true  // C.4 (the rest of C.4 is checked below)
        case 0xFFF9...0xFFFD: return true  // C.6
        case 0x2FF0...0x2FFB: return true  // C.7
        case 0x0340, 0x0341, 0x200E, 0x200F, 0x202A...0x202E: return true  // C.8
        case 0xE0001, 0xE0020...0xE007F: return true  // C.9
        default: return value & 0xFFFE == 0xFFFE  // C.4: U+xxFFFE and U+xxFFFF in every plane
        }
    }
}
