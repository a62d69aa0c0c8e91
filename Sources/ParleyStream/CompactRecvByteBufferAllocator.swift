import NIOCore

/// NIO's `AdaptiveRecvByteBufferAllocator` (the same sizes, grown and shrunk by the same
/// rule), in 13 bytes instead of 33.
///
/// A channel keeps its receive allocator as an existential, whose inline buffer holds
/// 24 bytes: the adaptive allocator did not fit, so every connection carried it in a boxed
/// copy of its own (made at its first read, 64 bytes with malloc's overhead). This one is
/// stored inline.
public struct CompactRecvByteBufferAllocator: RecvByteBufferAllocator {
    private let minimum: UInt32
    private let maximum: UInt32
    private var next: UInt32
    private var decreaseNow = false

    /// Sizes are rounded to powers of two as NIO's adaptive allocator does: `minimum` and
    /// `initial` down, `maximum` up.
    public init(minimum: Int, initial: Int, maximum: Int) {
        precondition(minimum > 0 && minimum <= initial && initial <= maximum && maximum <= 1 << 30)
        self.minimum = UInt32(Self.powerOfTwo(atMost: minimum))
        self.next = UInt32(Self.powerOfTwo(atMost: initial))
        let maximumDown = Self.powerOfTwo(atMost: maximum)
        self.maximum = UInt32(maximumDown == maximum ? maximum : maximumDown << 1)
    }

    private static func powerOfTwo(atMost value: Int) -> Int {
        1 << (Int.bitWidth - 1 - value.leadingZeroBitCount)
    }

    public func buffer(allocator: ByteBufferAllocator) -> ByteBuffer {
        allocator.buffer(capacity: Int(next))
    }

    public func nextBufferSize() -> Int? {
        Int(next)
    }

    /// Halves the size after two reads in a row that would have fit in half; doubles it
    /// after a read that filled the buffer.
    public mutating func record(actualReadBytes: Int) -> Bool {
        let lower = next >> 1
        if actualReadBytes <= Int(lower), lower >= minimum {
            if decreaseNow {
                next = lower
                decreaseNow = false
            } else {
                decreaseNow = true
            }
            return false
        }
        decreaseNow = false
        if actualReadBytes >= Int(next), next << 1 <= maximum {
            next <<= 1
            return true
        }
        return false
    }
}
