import ParleyCore

/// An occupant's XEP-0421 id: the first 18 bytes of the HMAC of its account, kept inline and
/// spelled out in base64 (24 characters) only when a stanza carries it. As a string it was a
/// heap block of its own per occupant (80 bytes), made amid a fill's churn and left on a page
/// that it then kept resident (bench/README.md, MUC, seventh round).
struct MUCOccupantID: Sendable, Hashable {
    static let byteCount = 18

    private let high: UInt64
    private let low: UInt64
    private let last: UInt16
    /// 18, or 0 for the empty id of a digest that could not be made.
    private let count: UInt8

    /// The first 18 bytes of `digest` (all of it if shorter: none when it could not be made).
    init(digest: [UInt8]) {
        var bytes = [UInt8](repeating: 0, count: Self.byteCount)
        let count = min(digest.count, Self.byteCount)
        bytes.replaceSubrange(0..<count, with: digest.prefix(count))
        func word(_ at: Int) -> UInt64 { bytes[at..<at + 8].reduce(0) { $0 << 8 | UInt64($1) } }
        high = word(0)
        low = word(8)
        last = UInt16(bytes[16]) << 8 | UInt16(bytes[17])
        self.count = UInt8(count)
    }

    var bytes: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Self.byteCount)
        for word in [high, low] {
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: word >> UInt64(shift))) }
        }
        bytes.append(UInt8(truncatingIfNeeded: last >> 8))
        bytes.append(UInt8(truncatingIfNeeded: last))
        return Array(bytes.prefix(Int(count)))
    }

    /// The id as stanzas carry it.
    var text: String { Base64.encode(bytes) }
}
