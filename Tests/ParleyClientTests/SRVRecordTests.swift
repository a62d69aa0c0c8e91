@testable import ParleyClient
import Testing

@Suite struct SRVRecordTests {
    /// A DNS response for `_xmpp-client._tcp.example.com SRV` with two answers, the second
    /// target compressed against the question name (RFC 1035 §4.1.4).
    static func response() -> [UInt8] {
        func name(_ labels: [String]) -> [UInt8] {
            labels.flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) } + [0]
        }
        func u16(_ value: Int) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
        var bytes: [UInt8] = u16(0x1234) + u16(0x8180) + u16(1) + u16(2) + u16(0) + u16(0)
        bytes += name(["_xmpp-client", "_tcp", "example", "com"]) + u16(33) + u16(1)
        let first = u16(10) + u16(5) + u16(5222) + name(["xmpp1", "example", "com"])
        bytes += [0xC0, 12] + u16(33) + u16(1) + [0, 0, 14, 16] + u16(first.count) + first
        // "xmpp2" then a pointer to "example.com" inside the question (offset 12 + 13 + 5).
        let second = u16(20) + u16(0) + u16(5223) + [5] + Array("xmpp2".utf8) + [0xC0, 30]
        bytes += [0xC0, 12] + u16(33) + u16(1) + [0, 0, 14, 16] + u16(second.count) + second
        return bytes
    }

    @Test func parsesAnswersWithCompressedNames() throws {
        let records = try #require(SRVRecord.parse(response: Self.response()))
        #expect(records == [
            SRVRecord(priority: 10, weight: 5, port: 5222, target: "xmpp1.example.com"),
            SRVRecord(priority: 20, weight: 0, port: 5223, target: "xmpp2.example.com"),
        ])
    }

    @Test func rejectsTruncatedAndLoopingMessages() {
        let full = Self.response()
        #expect(SRVRecord.parse(response: Array(full.prefix(full.count - 3))) == nil)
        #expect(SRVRecord.parse(response: Array(full.prefix(5))) == nil)
        var looping = full
        looping[full.count - 2] = 0xC0
        looping[full.count - 1] = UInt8(full.count - 2)  // a pointer to itself
        #expect(SRVRecord.parse(response: looping) == nil)
    }

    @Test func nameErrorMeansNoRecords() {
        var bytes = Self.response()
        bytes[3] = 0x83  // RCODE 3, NXDOMAIN
        #expect(SRVRecord.parse(response: bytes) == [])
    }

    @Test func ordersByPriorityThenWeight() {
        let records = [
            SRVRecord(priority: 20, weight: 0, port: 1, target: "c"),
            SRVRecord(priority: 10, weight: 0, port: 1, target: "b"),
            SRVRecord(priority: 10, weight: 100, port: 1, target: "a"),
        ]
        // With the random pick at its largest, the heavier record of priority 10 comes first.
        let ordered = SRVRecord.ordered(records, random: { $0 - 1 })
        #expect(ordered.map(\.target) == ["a", "b", "c"])
        #expect(SRVRecord.ordered([SRVRecord(priority: 0, weight: 0, port: 0, target: ".")]).isEmpty)
    }

    @Test func aConfiguredHostSkipsTheLookup() async throws {
        var configuration = ClientConfiguration(jid: try .init("alice@example.com"), password: "x")
        configuration.host = "127.0.0.1"
        configuration.port = 5299
        let candidates = try await XMPPClient.candidates(for: configuration)
        #expect(candidates.count == 1 && candidates[0].serverPort == 5299)
    }
}
