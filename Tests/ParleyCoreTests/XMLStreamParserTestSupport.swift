import ParleyCore
import ParleyTestSupport

/// Helpers shared by the XMLStreamParser test files.
enum ParserTesting {
    static let streamHeader =
        "<?xml version='1.0'?><stream:stream xmlns='jabber:client' "
        + "xmlns:stream='http://etherx.jabber.org/streams' to='example.com' version='1.0'>"

    enum Chunking: CustomStringConvertible, Sendable {
        case whole
        case fixed(Int)
        case random(seed: UInt64, maxSize: Int)

        func sizes(total: Int) -> [Int] {
            switch self {
            case .whole:
                return [total]
            case .fixed(let size):
                return stride(from: 0, to: total, by: size).map { min(size, total - $0) }
            case .random(let seed, let maxSize):
                var generator = SeededGenerator(seed: seed)
                var sizes: [Int] = []
                var remaining = total
                while remaining > 0 {
                    let size = min(remaining, Int.random(in: 1...maxSize, using: &generator))
                    sizes.append(size)
                    remaining -= size
                }
                return sizes
            }
        }

        var description: String {
            switch self {
            case .whole: "whole"
            case .fixed(let size): "\(size)-byte chunks"
            case .random(let seed, let maxSize): "random chunks ≤\(maxSize) (seed \(seed))"
            }
        }
    }

    /// Feeds one slice of `bytes` through the raw-buffer API.
    static func feed(
        _ parser: XMLStreamParser, _ bytes: [UInt8], _ range: Range<Int>,
        _ handle: (XMLStreamEvent) -> XMLStreamParser.Next
    ) throws(StreamError) -> Int {
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(StreamError) -> Int in
                try parser.feed(UnsafeRawBufferPointer(rebasing: raw[range]), handle)
            }
        }
        return try result.get()
    }

    /// Feeds all of `bytes` in the given chunking and collects the events.
    static func events(
        _ bytes: [UInt8], _ chunking: Chunking = .whole, limits: XMLStreamParser.Limits = .init()
    ) throws(StreamError) -> [XMLStreamEvent] {
        let parser = XMLStreamParser(limits: limits)
        var events: [XMLStreamEvent] = []
        var offset = 0
        for size in chunking.sizes(total: bytes.count) {
            let consumed = try feed(parser, bytes, offset..<(offset + size)) { event in
                events.append(event)
                return .continue
            }
            precondition(consumed == size)
            offset += size
        }
        return events
    }

    static func events(
        _ text: String, _ chunking: Chunking = .whole, limits: XMLStreamParser.Limits = .init()
    ) throws(StreamError) -> [XMLStreamEvent] {
        try events(Array(text.utf8), chunking, limits: limits)
    }

    /// The error feeding `bytes` throws, or nil if it parses.
    static func error(
        _ bytes: [UInt8], _ chunking: Chunking = .whole, limits: XMLStreamParser.Limits = .init()
    ) -> StreamError? {
        do {
            _ = try events(bytes, chunking, limits: limits)
            return nil
        } catch {
            return error
        }
    }

    static func error(
        _ text: String, _ chunking: Chunking = .whole, limits: XMLStreamParser.Limits = .init()
    ) -> StreamError? {
        error(Array(text.utf8), chunking, limits: limits)
    }

    static func stanzas(_ events: [XMLStreamEvent]) -> [XMLElement] {
        events.compactMap { if case .stanza(let element) = $0 { element } else { nil } }
    }

    /// The offset just past the first occurrence of `needle` at or after `start`.
    static func offset(after needle: String, in bytes: [UInt8], from start: Int = 0) -> Int? {
        let pattern = Array(needle.utf8)
        guard pattern.count <= bytes.count else { return nil }
        var index = start
        while index + pattern.count <= bytes.count {
            if bytes[index..<(index + pattern.count)].elementsEqual(pattern) { return index + pattern.count }
            index += 1
        }
        return nil
    }
}
