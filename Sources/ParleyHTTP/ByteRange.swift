/// A `Range: bytes=…` header (RFC 9110 §14.2). Only single ranges are honoured; a list of
/// several, or a header that does not parse, is ignored and the whole file is sent, as the RFC
/// allows.
enum ByteRange: Equatable {
    case satisfiable(ClosedRange<Int>)
    /// 416: well formed, but starts past the end of the file.
    case unsatisfiable
    case ignored

    static func parse(_ header: String, size: Int) -> ByteRange {
        guard header.hasPrefix("bytes="), !header.contains(",") else { return .ignored }
        let spec = header.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return .ignored }
        let first = parts[0].isEmpty ? nil : Int(parts[0])
        let last = parts[1].isEmpty ? nil : Int(parts[1])
        if !parts[0].isEmpty, first == nil { return .ignored }
        if !parts[1].isEmpty, last == nil { return .ignored }
        switch (first, last) {
        case (nil, nil): return .ignored
        case (nil, let suffix?):
            // The last `suffix` bytes.
            guard suffix > 0, size > 0 else { return .unsatisfiable }
            return .satisfiable(max(0, size - suffix)...(size - 1))
        case (let start?, nil):
            guard start < size else { return .unsatisfiable }
            return .satisfiable(start...(size - 1))
        case (let start?, let end?):
            guard start <= end else { return .ignored }
            guard start < size else { return .unsatisfiable }
            return .satisfiable(start...min(end, size - 1))
        }
    }
}
