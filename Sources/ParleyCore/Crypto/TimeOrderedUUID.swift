import Foundation

/// Unique ids that sort by the time they were made: the XEP-0359 stanza-ids the user archives
/// and the rooms stamp, and the ids PEP gives items and nodes published without one.
public enum TimeOrderedUUID {
    /// A time-ordered UUID in lower case (the layout of RFC 9562's version 7: 48 bits of Unix
    /// milliseconds, then 74 random bits), as the XEP-0359 examples show ids. Ids made later
    /// sort later, so an archive's stanza-id index grows at its end instead of taking each
    /// new id at a random place (a third of SQLite's work per message when ids were random
    /// version-4 UUIDs, bench/README.md); the random bits keep them unguessable. Foundation's
    /// `UUID()` opens, reads and closes /dev/urandom for each one.
    public static func make(now: Date = Date()) -> String {
        // OpenSSL's generator: the system's costs a getrandom call per word (strace of the
        // defaults benchmark: two per message).
        let random: UInt64
        let random2: UInt64
        if let words = SecureRandom.twoWords() {
            (random, random2) = words
        } else {
            var generator = SystemRandomNumberGenerator()
            (random, random2) = (generator.next(), generator.next())
        }
        let milliseconds = UInt64(max(now.timeIntervalSince1970 * 1000, 0).rounded(.down)) & 0xFFFF_FFFF_FFFF
        let high = milliseconds << 16 | 0x7000 | (random & 0x0FFF)
        let low = random2 & 0x3FFF_FFFF_FFFF_FFFF | 0x8000_0000_0000_0000
        return String(unsafeUninitializedCapacity: 36) { buffer in
            var index = 0
            func put(_ value: UInt64, nibbles: Int) {
                for shift in stride(from: (nibbles - 1) * 4, through: 0, by: -4) {
                    let nibble = UInt8(truncatingIfNeeded: value >> UInt64(shift)) & 0xF
                    buffer[index] = nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
                    index += 1
                }
            }
            func dash() {
                buffer[index] = UInt8(ascii: "-")
                index += 1
            }
            put(high >> 32, nibbles: 8)
            dash()
            put(high >> 16 & 0xFFFF, nibbles: 4)
            dash()
            put(high & 0xFFFF, nibbles: 4)
            dash()
            put(low >> 48, nibbles: 4)
            dash()
            put(low & 0xFFFF_FFFF_FFFF, nibbles: 12)
            return index
        }
    }
}
