/// The element names, attribute names and namespace URIs of one parser's stream, as Strings,
/// numbered in the order they were first seen. Parsed stanzas (`XMLArena`) refer to their
/// names by number and keep the table alive, so a stanza holds no Strings of its own.
///
/// Append-only, and an appended String never moves: chunk `k` holds `16 << k` entries and is
/// allocated when first needed, so the chunk list never grows either. That is what makes
/// sharing it safe: the parser appends on its thread while stanzas it handed over earlier
/// read, on any thread, only entries written before they were handed over (the handover
/// orders the writes before the reads), and no entry is ever written twice.
final class XMLNameTable: @unchecked Sendable {
    private static let chunkLimit = 32
    private let chunks: UnsafeMutablePointer<UnsafeMutablePointer<String>?>
    /// Written and read by the parser's thread only.
    private(set) var count = 0

    /// Shared by parsers whose own table was given back while idle; never appended to.
    static let empty = XMLNameTable()

    init() {
        chunks = .allocate(capacity: Self.chunkLimit)
        chunks.initialize(repeating: nil, count: Self.chunkLimit)
    }

    deinit {
        var remaining = count
        for chunk in 0..<Self.chunkLimit {
            guard let storage = chunks[chunk] else { break }
            let size = 16 << chunk
            storage.deinitialize(count: min(size, remaining))
            storage.deallocate()
            remaining -= min(size, remaining)
        }
        chunks.deallocate()
    }

    /// Entry `index` lives in chunk `k` at `index + 16 - (16 << k)`, where `16 << k` is the
    /// highest power of two not above `index + 16`.
    @inline(__always)
    private static func location(_ index: Int) -> (chunk: Int, offset: Int) {
        let biased = index + 16
        let bit = Int.bitWidth - 1 - biased.leadingZeroBitCount
        return (bit - 4, biased - (1 << bit))
    }

    @inline(__always)
    subscript(index: Int32) -> String {
        let (chunk, offset) = Self.location(Int(index))
        return chunks[chunk].unsafelyUnwrapped[offset]
    }

    /// Compares in place, without copying (and so retaining) the entry.
    @inline(__always)
    func entry(_ index: Int32, equals string: String) -> Bool {
        let (chunk, offset) = Self.location(Int(index))
        return (chunks[chunk].unsafelyUnwrapped + offset).pointee == string
    }

    func append(_ string: String) -> Int32 {
        let (chunk, offset) = Self.location(count)
        if offset == 0 {
            precondition(chunk < Self.chunkLimit, "name table full")
            chunks[chunk] = .allocate(capacity: 16 << chunk)
        }
        (chunks[chunk].unsafelyUnwrapped + offset).initialize(to: string)
        count += 1
        return Int32(truncatingIfNeeded: count - 1)
    }
}
