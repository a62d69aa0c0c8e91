import Testing
@testable import ParleyCore

@Suite struct CryptoBase64Tests {
    // RFC 4648 §10.
    static let vectors: [(String, String)] = [
        ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="),
        ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy"),
    ]

    @Test func rfc4648Vectors() throws {
        for (plain, encoded) in Self.vectors {
            #expect(Base64.encode(bytes(plain)) == encoded)
            #expect(try Base64.decode(encoded) == bytes(plain))
        }
    }

    @Test func allByteValuesRoundTrip() throws {
        let all = (0...255).map(UInt8.init)
        for length in [0, 1, 2, 3, 254, 255, 256] {
            let data = Array(all.prefix(length))
            #expect(try Base64.decode(Base64.encode(data)) == data)
        }
        #expect(Base64.encode([0xFB, 0xFF]) == "+/8=")
    }

    @Test(arguments: [
        "Zg", "Zg=", "Zm9vY", // length not a multiple of 4
        "Zm9v Zg==", "Zm9v\nZg==", " Zm9v", // whitespace
        "Zm-_", "Zm9v!A==", // wrong alphabet
        "Z===", "====", "Zg==Zg==", "Zm=v", "=Zm9", // padding in the wrong place
        "Zh==", "Zm9=", // unused bits not zero
    ])
    func rejectsNonCanonicalInput(input: String) {
        #expect(throws: Base64.DecodingError.self) { try Base64.decode(input) }
    }

    @Test func reportsWhatWasWrong() {
        #expect(throws: Base64.DecodingError.invalidLength(3)) { try Base64.decode("Zm9") }
        #expect(throws: Base64.DecodingError.invalidCharacter(offset: 2)) { try Base64.decode("Zm*v") }
        #expect(throws: Base64.DecodingError.nonCanonicalPadding) { try Base64.decode("Zh==") }
    }
}
