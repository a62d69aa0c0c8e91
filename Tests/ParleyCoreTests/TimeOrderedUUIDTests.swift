import Foundation
import ParleyCore
import Testing

/// The ids the archives, rooms and PEP make: version-7 UUIDs that sort by time.
@Suite struct TimeOrderedUUIDTests {
    @Test func idsAreTimeOrderedVersion7UUIDs() throws {
        let earlier = TimeOrderedUUID.make(now: Date(timeIntervalSince1970: 1_764_000_000.001))
        let later = TimeOrderedUUID.make(now: Date(timeIntervalSince1970: 1_764_000_000.002))
        for id in [earlier, later] {
            let uuid = try #require(UUID(uuidString: id))
            #expect(uuid.uuidString.lowercased() == id)
            let bytes = Array(id.utf8)
            #expect(bytes[14] == UInt8(ascii: "7"))  // version
            #expect([UInt8](Array("89ab".utf8)).contains(bytes[19]))  // RFC 9562 variant
        }
        #expect(earlier < later)
        // 1,764,000,000,001 ms (0x019ab697e801) in the first 48 bits.
        #expect(earlier.hasPrefix("019ab697-e801-7") && later.hasPrefix("019ab697-e802-7"))
        // Made in the same millisecond, ids still differ: the rest is random.
        let now = Date()
        #expect(Set((1...100).map { _ in TimeOrderedUUID.make(now: now) }).count == 100)
    }
}
