/// How far one file transfer got, reported on `ClientEvent.transferProgress` and to the
/// `progress` handler of `sendFile` and `download`.
public struct TransferProgress: Sendable, Equatable {
    public enum Direction: String, Sendable { case upload, download }

    public var direction: Direction
    /// Uploads: the id of the message that will carry the file. Downloads: the file's URL.
    public var transferID: String
    public var name: String
    public var completedBytes: Int64
    /// nil for a download whose size nobody said.
    public var totalBytes: Int64?

    public init(direction: Direction, transferID: String, name: String, completedBytes: Int64, totalBytes: Int64?) {
        self.direction = direction
        self.transferID = transferID
        self.name = name
        self.completedBytes = completedBytes
        self.totalBytes = totalBytes
    }

    public var isComplete: Bool { totalBytes.map { completedBytes >= $0 } ?? false }

    /// 0...1, or nil when the total is unknown.
    public var fraction: Double? {
        guard let totalBytes, totalBytes > 0 else { return nil }
        return min(1, Double(completedBytes) / Double(totalBytes))
    }
}

/// Sizes as people read them: "512 B", "1.2 MB" (decimal units, as file managers show).
public enum ByteCountFormat {
    public static func format(_ bytes: Int64) -> String {
        if bytes < 1000 { return "\(bytes) B" }
        let units = ["kB", "MB", "GB", "TB"]
        var value = Double(bytes) / 1000
        var unit = 0
        while value >= 999.95, unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        return String(format: value < 10 ? "%.1f" : "%.0f", value) + " " + units[unit]
    }
}
