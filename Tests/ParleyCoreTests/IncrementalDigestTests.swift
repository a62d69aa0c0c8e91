import Testing

@testable import ParleyCore

/// A hash fed in pieces (as a file streams by) equals the one-shot hash of the whole.
@Suite struct IncrementalDigestTests {
    @Test func piecesHashLikeTheWhole() throws {
        let whole = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        for (function, pieceSizes) in [(HashFunction.sha256, [1, 7, 65_536]), (.sha1, [1_000])] {
            for size in pieceSizes {
                let digest = try IncrementalDigest(function)
                var offset = 0
                while offset < whole.count {
                    try digest.update(Array(whole[offset..<min(offset + size, whole.count)]))
                    offset += size
                }
                #expect(try digest.finish() == function.digest(whole), "\(function) in pieces of \(size)")
            }
        }
        // RFC 6234's "abc" test vector, and nothing at all.
        let abc = try IncrementalDigest(.sha256)
        try abc.update(Array("ab".utf8))
        try abc.update(Array("c".utf8))
        #expect(try abc.finish().map { String(format: "%02x", $0) }.joined() == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(try IncrementalDigest(.sha256).finish() == HashFunction.sha256.digest([]))
    }

    @Test func aFinishedDigestTakesNoMore() throws {
        let digest = try IncrementalDigest(.sha256)
        _ = try digest.finish()
        #expect(throws: CryptoError.self) { try digest.update([1]) }
        #expect(throws: CryptoError.self) { try digest.finish() }
    }
}
