@testable import ParleyCore
import ParleyTestSupport
import Testing

/// The stanza UTF-8 check against the standard library's strict decoder, on ASCII runs of
/// every length around the word sizes the check steps by, with one sequence (valid or not)
/// placed anywhere in them, including the last bytes, which the check reads as an
/// overlapping word.
@Suite struct UTF8ValidationTests {
    static let sequences: [[UInt8]] = [
        [0xC3, 0xA9], [0xE2, 0x82, 0xAC], [0xF0, 0x9F, 0x98, 0x80], [0xF4, 0x8F, 0xBF, 0xBF],  // valid
        [0xC0, 0xAF], [0xC1, 0xBF], [0xE0, 0x80, 0xAF], [0xF0, 0x80, 0x80, 0xAF],  // overlong
        [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80],  // surrogate, too high
        [0x80], [0xC3], [0xE2, 0x82], [0xFF],  // stray continuation, truncated, never valid
    ]

    @Test func agreesWithTheStandardLibrary() {
        for length in 0...72 {
            for sequence in Self.sequences {
                for position in 0...length {
                    var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                    bytes.insert(contentsOf: sequence, at: position)
                    let expected = String(validating: bytes, as: UTF8.self) != nil
                    let checked = bytes.withUnsafeBufferPointer { UTF8Validation.isValid($0.baseAddress!, $0.count) }
                    #expect(checked == expected, "\(sequence) at \(position) of \(length) ASCII bytes")
                }
            }
            let ascii = [UInt8](repeating: UInt8(ascii: "z"), count: length + 1)
            #expect(ascii.withUnsafeBufferPointer { UTF8Validation.isValid($0.baseAddress!, $0.count) })
        }
    }

    @Test func randomMixturesAgreeWithTheStandardLibrary() {
        var generator = SeededGenerator(seed: 7)
        for _ in 0..<5_000 {
            var bytes: [UInt8] = []
            let length = Int.random(in: 1...90, using: &generator)
            while bytes.count < length {
                if Double.random(in: 0..<1, using: &generator) < 0.9 {
                    bytes.append(UInt8.random(in: 0x20...0x7E, using: &generator))
                } else {
                    bytes += Self.sequences.randomElement(using: &generator)!
                }
            }
            let expected = String(validating: bytes, as: UTF8.self) != nil
            let checked = bytes.withUnsafeBufferPointer { UTF8Validation.isValid($0.baseAddress!, $0.count) }
            #expect(checked == expected, "\(bytes)")
        }
    }
}
