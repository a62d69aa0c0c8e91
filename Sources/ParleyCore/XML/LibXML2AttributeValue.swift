#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An attribute value as libxml2's SAX2 callback hands it over. Without entity substitution,
/// libxml2 passes every `&` in an attribute value on as the character reference `&#38;` (all
/// other references are already replaced), so that is the one sequence to decode.
enum LibXML2AttributeValue {
    /// Copies the value to `target` (room for `count` bytes), decoded; returns the bytes written.
    @inline(__always)
    static func decode(_ value: UnsafePointer<UInt8>, _ count: Int, into target: UnsafeMutablePointer<UInt8>) -> Int {
        if memchr(value, Int32(UInt8(ascii: "&")), count) == nil {
            target.initialize(from: value, count: count)
            return count
        }
        return decodeAmpersands(value, count, into: target)
    }

    /// The value as a String.
    static func string(_ value: UnsafePointer<UInt8>, _ count: Int) -> String {
        guard memchr(value, Int32(UInt8(ascii: "&")), count) != nil else {
            return String(parsedUTF8: UnsafeBufferPointer(start: value, count: count))
        }
        return String(unsafeUninitializedCapacity: count) { buffer in
            decodeAmpersands(value, count, into: buffer.baseAddress.unsafelyUnwrapped)
        }
    }

    @inline(never)
    private static func decodeAmpersands(
        _ value: UnsafePointer<UInt8>, _ count: Int, into target: UnsafeMutablePointer<UInt8>
    ) -> Int {
        var written = 0
        var index = 0
        while index < count {
            let byte = value[index]
            target[written] = byte
            written += 1
            if byte == UInt8(ascii: "&"), index + 4 < count, value[index + 1] == UInt8(ascii: "#"),
                value[index + 2] == UInt8(ascii: "3"), value[index + 3] == UInt8(ascii: "8"),
                value[index + 4] == UInt8(ascii: ";")
            {
                index += 5
            } else {
                index += 1
            }
        }
        return written
    }
}
