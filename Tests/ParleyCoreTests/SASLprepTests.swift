import Testing
@testable import ParleyCore

@Suite struct SASLprepTests {
    // RFC 4013 §3 examples, those within the implemented subset.
    @Test(arguments: [
        ("I\u{00AD}X", "IX"),  // soft hyphen mapped to nothing
        ("user", "user"),
        ("USER", "USER"),  // no case folding
        ("\u{00AA}", "a"),  // NFKC
        ("\u{2168}", "IX"),  // NFKC
    ])
    func rfc4013Examples(input: String, expected: String) throws {
        #expect(try SASLprep.prepare(input) == expected)
    }

    @Test func rfc4013ProhibitedExample() {
        #expect(throws: SASLprep.Error.prohibitedCharacter("\u{0007}")) { try SASLprep.prepare("\u{0007}") }
    }

    @Test func mapsNonASCIISpacesAndRemovesInvisibles() throws {
        #expect(try SASLprep.prepare("a\u{00A0}b\u{3000}c\u{2003}d") == "a b c d")
        #expect(try SASLprep.prepare("a\u{200D}b\u{FEFF}c\u{FE0F}d") == "abcd")
        #expect(try SASLprep.prepare("") == "")
    }

    @Test(arguments: [
        0x00, 0x1F, 0x7F, 0x85, 0x2028,  // controls
        0xE000, 0xF0000,  // private use
        0xFDD0, 0xFFFF, 0x1FFFE,  // non-characters (Swift refuses them in literals)
        0xFFFD, 0x2FF0, 0x200E, 0x202E, 0xE0001,  // C.6–C.9
    ] as [UInt32])
    func prohibited(value: UInt32) {
        let scalar = Unicode.Scalar(value)!
        #expect(throws: SASLprep.Error.prohibitedCharacter(scalar)) {
            try SASLprep.prepare("a" + String(Character(scalar)))
        }
    }
}
