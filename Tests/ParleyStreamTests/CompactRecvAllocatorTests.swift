import NIOCore
import ParleyStream
import Testing

/// `CompactRecvByteBufferAllocator` sizes reads as NIO's adaptive allocator does, and fits
/// in an existential's inline buffer.
@Suite struct CompactRecvAllocatorTests {
    @Test func fitsInline() {
        #expect(MemoryLayout<CompactRecvByteBufferAllocator>.size <= 3 * MemoryLayout<Int>.size)
    }

    @Test func sizesAsTheAdaptiveAllocator() {
        for (minimum, initial, maximum) in [(64, 256, 65_536), (64, 512, 65_536), (100, 300, 5_000), (64, 64, 64)] {
            var adaptive = AdaptiveRecvByteBufferAllocator(minimum: minimum, initial: initial, maximum: maximum)
            var compact = CompactRecvByteBufferAllocator(minimum: minimum, initial: initial, maximum: maximum)
            var generator = SystemRandomNumberGenerator()
            for step in 0..<5_000 {
                #expect(compact.nextBufferSize() == adaptive.nextBufferSize())
                let size = adaptive.nextBufferSize() ?? 0
                // Runs of full reads, of tiny reads, and anything in between.
                let read: Int
                switch (step / 50) % 3 {
                case 0: read = size
                case 1: read = Int.random(in: 0...16, using: &generator)
                default: read = Int.random(in: 0...(2 * size), using: &generator)
                }
                #expect(compact.record(actualReadBytes: read) == adaptive.record(actualReadBytes: read))
            }
            #expect(compact.buffer(allocator: ByteBufferAllocator()).capacity == adaptive.buffer(allocator: ByteBufferAllocator()).capacity)
        }
    }
}
