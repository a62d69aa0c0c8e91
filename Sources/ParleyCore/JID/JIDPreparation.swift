import Foundation

/// The string preparation RFC 7622 asks of each JID part, after the PRECIS profiles of
/// RFC 8265 (UsernameCaseMapped for the localpart, OpaqueString for the resourcepart) and
/// RFC 5890 for the domainpart.
///
/// Parley applies the parts of those profiles that decide equality and safety: width and
/// case mapping, NFC, the characters RFC 7622 §3.3.1 excludes from localparts, and the
/// control and non-character code points PRECIS disallows everywhere. It does not convert
/// internationalised domain names to A-labels; they are compared in their NFC, lower-case
/// Unicode form, which is what RFC 7622 §3.2.1 stores.
enum JIDPreparation {
    static func localpart(_ input: String) throws(JIDError) -> String {
        let ascii = isPlainASCII(input)
        let prepared = ascii ? asciiLowercased(input) : fold(input).lowercased().precomposedStringWithCanonicalMapping
        try check(prepared, part: .localpart)
        for scalar in prepared.unicodeScalars {
            switch scalar {
            case "\"", "&", "'", "/", ":", "<", ">", "@", " ":
                throw .forbiddenCharacter(.localpart, scalar)
            default:
                // The only whitespace in printable ASCII is the space, refused above.
                if !ascii, scalar.properties.isWhitespace { throw .forbiddenCharacter(.localpart, scalar) }
            }
        }
        return prepared
    }

    static func resourcepart(_ input: String) throws(JIDError) -> String {
        let prepared: String
        if isPlainASCII(input) {
            prepared = input
        } else {
            // OpaqueString maps non-ASCII spaces to U+0020 and normalises to NFC, nothing more.
            let spaced = String(
                String.UnicodeScalarView(
                    input.unicodeScalars.map { $0.properties.generalCategory == .spaceSeparator ? " " : $0 }))
            prepared = spaced.precomposedStringWithCanonicalMapping
        }
        try check(prepared, part: .resourcepart)
        return prepared
    }

    static func domainpart(_ input: String) throws(JIDError) -> String {
        var domain = isPlainASCII(input) ? asciiLowercased(input) : fold(input).lowercased().precomposedStringWithCanonicalMapping
        // A single trailing dot is the DNS root and is removed before comparison (§3.2).
        if domain.hasSuffix(".") { domain.removeLast() }
        try check(domain, part: .domainpart)
        if domain.hasPrefix("[") {
            guard domain.hasSuffix("]"), domain.count > 2,
                domain.dropFirst().dropLast().allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." })
            else { throw .invalidDomain("malformed IPv6 literal") }
            return domain
        }
        for label in domain.split(separator: ".", omittingEmptySubsequences: false) {
            if label.isEmpty { throw .invalidDomain("empty label") }
            if label.utf8.count > 63 { throw .invalidDomain("a label is longer than 63 bytes") }
            if label.hasPrefix("-") || label.hasSuffix("-") {
                throw .invalidDomain("a label starts or ends with a hyphen")
            }
        }
        for scalar in domain.unicodeScalars {
            if scalar.isASCII {
                let isAllowed = (scalar >= "a" && scalar <= "z") || (scalar >= "0" && scalar <= "9")
                    || scalar == "-" || scalar == "." || scalar == "_"
                if !isAllowed { throw .forbiddenCharacter(.domainpart, scalar) }
            } else if scalar.properties.isWhitespace || !isLetterOrDigitOrMark(scalar) {
                throw .forbiddenCharacter(.domainpart, scalar)
            }
        }
        return domain
    }

    private static func check(_ value: String, part: JIDPart) throws(JIDError) {
        if value.isEmpty { throw .emptyPart(part) }
        let bytes = value.utf8.count
        if bytes > JID.maxPartBytes { throw .partTooLong(part, bytes: bytes) }
        // Printable ASCII has none of the refused categories; most JIDs are nothing else, and
        // the Unicode property look-ups below were ~2 % of the message path's CPU.
        if isPlainASCII(value) { return }
        for scalar in value.unicodeScalars {
            switch scalar.properties.generalCategory {
            case .control, .format, .surrogate, .privateUse, .unassigned:
                throw .forbiddenCharacter(part, scalar)
            default:
                if scalar.properties.isNoncharacterCodePoint { throw .forbiddenCharacter(part, scalar) }
            }
        }
    }

    /// Width mapping (fullwidth/halfwidth to their decomposition), as UsernameCaseMapped asks.
    /// Every character of the Halfwidth and Fullwidth Forms block has a <wide> or <narrow>
    /// compatibility decomposition, so NFKC of just those characters is exactly the mapping.
    private static func fold(_ input: String) -> String {
        var result = ""
        for scalar in input.unicodeScalars {
            if (0xFF00...0xFFEF).contains(scalar.value) {
                result += String(scalar).precomposedStringWithCompatibilityMapping
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    private static func isLetterOrDigitOrMark(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
            .nonspacingMark, .spacingMark, .enclosingMark, .decimalNumber, .letterNumber, .otherNumber:
            true
        default: false
        }
    }

    /// `lowercased()` for printable ASCII, returning the string itself (no copy, no Unicode
    /// tables) when it has no capital: JIDs nearly always arrive in lower case already.
    private static func asciiLowercased(_ input: String) -> String {
        guard input.utf8.contains(where: { $0 >= 0x41 && $0 <= 0x5A }) else { return input }
        return String(decoding: input.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
    }

    private static func isPlainASCII(_ input: String) -> Bool {
        input.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F }
    }
}
