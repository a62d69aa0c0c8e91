import Testing
@testable import ParleyCore

@Suite struct CryptoDigestTests {
    @Test func sha1AndSHA256OfABC() throws {
        #expect(try HashFunction.sha1.digest(bytes("abc")) == hex("a9993e364706816aba3e25717850c26c9cd0d89d"))
        #expect(
            try HashFunction.sha256.digest(bytes("abc"))
                == hex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"))
    }

    @Test func digestOfEmptyInput() throws {
        #expect(try HashFunction.sha1.digest([]) == hex("da39a3ee5e6b4b0d3255bfef95601890afd80709"))
        #expect(HashFunction.sha1.digestSize == 20 && HashFunction.sha256.digestSize == 32)
    }

    // RFC 4231 §4.2, §4.3 and §4.7 (test cases 1, 2 and 6).
    @Test(arguments: [
        (hex(String(repeating: "0b", count: 20)), bytes("Hi There"),
         "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
        (bytes("Jefe"), bytes("what do ya want for nothing?"),
         "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        (hex(String(repeating: "aa", count: 131)), bytes("Test Using Larger Than Block-Size Key - Hash Key First"),
         "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
    ])
    func hmacSHA256RFC4231(key: [UInt8], data: [UInt8], expected: String) throws {
        #expect(try HashFunction.sha256.hmac(key: key, data: data) == hex(expected))
    }

    @Test func hmacAcceptsEmptyKeyAndData() throws {
        // HMAC-SHA256("", "") is a well-known constant.
        #expect(
            try HashFunction.sha256.hmac(key: [], data: [])
                == hex("b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad"))
    }
}

@Suite struct CryptoPBKDF2Tests {
    // RFC 6070 §2, PBKDF2-HMAC-SHA1 (the 16 777 216-iteration vector is left out for time).
    @Test(arguments: [
        ("password", "salt", 1, 20, "0c60c80f961f0e71f3a9b524af6012062fe037a6"),
        ("password", "salt", 2, 20, "ea6c014dc72d6f8ccd1ed92ace1d41f0d8de8957"),
        ("password", "salt", 4096, 20, "4b007901b765489abead49d926f721d065a429c1"),
        ("passwordPASSWORDpassword", "saltSALTsaltSALTsaltSALTsaltSALTsalt", 4096, 25,
         "3d2eec4fe41c849b80c8d83662c0e44a8b291a964cf2f07038"),
        ("pass\u{0}word", "sa\u{0}lt", 4096, 16, "56fa6aa75548099dcc37d7f03425e0c3"),
    ])
    func rfc6070(password: String, salt: String, iterations: Int, length: Int, expected: String) throws {
        let key = try HashFunction.sha1.pbkdf2(
            password: bytes(password), salt: bytes(salt), iterations: iterations, keyLength: length)
        #expect(key == hex(expected))
    }

    @Test func rejectsZeroIterations() {
        #expect(throws: CryptoError.self) {
            try HashFunction.sha256.pbkdf2(password: bytes("p"), salt: bytes("s"), iterations: 0)
        }
    }
}

@Suite struct CryptoConstantTimeTests {
    @Test func equals() {
        #expect(ConstantTime.equals([1, 2, 3], [1, 2, 3]))
        #expect(!ConstantTime.equals([1, 2, 3], [1, 2, 4]))
        #expect(!ConstantTime.equals([1, 2, 3], [1, 2]))
        #expect(ConstantTime.equals([], []))
    }

    @Test func xor() throws {
        #expect(try ConstantTime.xor([0xFF, 0x0F, 0x00], [0x0F, 0x0F, 0xAA]) == [0xF0, 0x00, 0xAA])
        #expect(throws: CryptoError.self) { try ConstantTime.xor([1], [1, 2]) }
    }

    @Test func randomBytes() throws {
        let a = try SecureRandom.bytes(32)
        let b = try SecureRandom.bytes(32)
        #expect(a.count == 32 && a != b)
        #expect(try SecureRandom.bytes(0).isEmpty)
    }

    /// The words come from a pool refilled every 256 calls: across several refills, every
    /// pair differs from every other (a refill that failed or repeated would show).
    @Test func twoWordsDifferAcrossRefillsOfThePool() throws {
        var seen = Set<[UInt64]>()
        for _ in 0..<1000 {
            let words = try #require(SecureRandom.twoWords())
            seen.insert([words.0, words.1])
        }
        #expect(seen.count == 1000)
    }
}
