/// A DNS SRV record (RFC 2782), as RFC 6120 §3.2.1 and XEP-0368 use them to find the host
/// and port of a domain's XMPP service.
public struct SRVRecord: Sendable, Hashable {
    public var priority: UInt16
    public var weight: UInt16
    public var port: UInt16
    public var target: String

    public init(priority: UInt16, weight: UInt16, port: UInt16, target: String) {
        self.priority = priority
        self.weight = weight
        self.port = port
        self.target = target
    }

    /// The SRV answers in a DNS response message (RFC 1035 §4), or nil if it is malformed.
    /// Parsed here rather than with libresolv's `ns_*` helpers, which are macros in part and
    /// would make the parsing impossible to test without a DNS server.
    public static func parse(response bytes: [UInt8]) -> [SRVRecord]? {
        var reader = DNSReader(bytes: bytes)
        guard let _ = reader.u16(), let flags = reader.u16(), let questions = reader.u16(), let answers = reader.u16(),
            reader.u16() != nil, reader.u16() != nil
        else { return nil }
        guard flags & 0x8000 != 0, flags & 0x000F == 0 else { return flags & 0x000F == 3 ? [] : nil }
        for _ in 0..<questions {
            guard reader.name() != nil, reader.u16() != nil, reader.u16() != nil else { return nil }
        }
        var records: [SRVRecord] = []
        for _ in 0..<answers {
            guard reader.name() != nil, let type = reader.u16(), reader.u16() != nil, reader.u32() != nil,
                let length = reader.u16()
            else { return nil }
            let end = reader.offset + Int(length)
            guard end <= bytes.count else { return nil }
            if type == 33 {
                guard let priority = reader.u16(), let weight = reader.u16(), let port = reader.u16(),
                    let target = reader.name()
                else { return nil }
                records.append(SRVRecord(priority: priority, weight: weight, port: port, target: target))
            }
            reader.offset = end
        }
        return records
    }

    /// RFC 2782 order: lowest priority first; within a priority, a weighted random shuffle.
    /// A single record with target "." means the service is decidedly not available.
    public static func ordered(
        _ records: [SRVRecord], random: (Int) -> Int = { Int.random(in: 0..<max($0, 1)) }
    ) -> [SRVRecord] {
        if records.count == 1, records[0].target == "." || records[0].target.isEmpty { return [] }
        var result: [SRVRecord] = []
        for priority in Set(records.map(\.priority)).sorted() {
            var group = records.filter { $0.priority == priority }
            while !group.isEmpty {
                let total = group.reduce(0) { $0 + Int($1.weight) }
                var pick = random(total + 1)
                var index = 0
                for (candidate, record) in group.enumerated() {
                    pick -= Int(record.weight)
                    index = candidate
                    if pick <= 0 { break }
                }
                result.append(group.remove(at: index))
            }
        }
        return result
    }
}

/// Reads big-endian integers and compressed names from a DNS message.
private struct DNSReader {
    let bytes: [UInt8]
    var offset = 0

    mutating func u16() -> UInt16? {
        guard offset + 2 <= bytes.count else { return nil }
        defer { offset += 2 }
        return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    mutating func u32() -> UInt32? {
        guard let high = u16(), let low = u16() else { return nil }
        return UInt32(high) << 16 | UInt32(low)
    }

    /// A domain name, following compression pointers (bounded, so a loop cannot hang us).
    mutating func name() -> String? {
        var labels: [String] = []
        var position = offset
        var jumped = false
        for _ in 0..<128 {
            guard position < bytes.count else { return nil }
            let length = Int(bytes[position])
            if length == 0 {
                if !jumped { offset = position + 1 }
                return labels.isEmpty ? "." : labels.joined(separator: ".")
            }
            if length & 0xC0 == 0xC0 {
                guard position + 1 < bytes.count else { return nil }
                if !jumped { offset = position + 2 }
                jumped = true
                position = (length & 0x3F) << 8 | Int(bytes[position + 1])
                continue
            }
            guard position + 1 + length <= bytes.count else { return nil }
            labels.append(String(decoding: bytes[(position + 1)..<(position + 1 + length)], as: UTF8.self))
            position += 1 + length
        }
        return nil
    }
}
