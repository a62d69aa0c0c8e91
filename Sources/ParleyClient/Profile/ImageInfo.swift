/// What an avatar's metadata says about its image (XEP-0084 §4.2: type, and width and height
/// when known), read from the file's first bytes: no image library, nothing decoded.
public struct ImageInfo: Sendable, Equatable {
    public var type: String
    public var width: Int?
    public var height: Int?

    public init(type: String, width: Int? = nil, height: Int? = nil) {
        self.type = type
        self.width = width
        self.height = height
    }

    /// nil when the bytes are none of PNG, JPEG, GIF or WebP.
    public init?(_ bytes: [UInt8]) {
        if let png = Self.png(bytes) {
            self = png
        } else if let jpeg = Self.jpeg(bytes) {
            self = jpeg
        } else if bytes.starts(with: Array("GIF87a".utf8)) || bytes.starts(with: Array("GIF89a".utf8)) {
            let size = bytes.count >= 10 ? (Int(bytes[6]) | Int(bytes[7]) << 8, Int(bytes[8]) | Int(bytes[9]) << 8) : nil
            self.init(type: "image/gif", width: size?.0, height: size?.1)
        } else if bytes.count >= 12, bytes.starts(with: Array("RIFF".utf8)), Array(bytes[8..<12]) == Array("WEBP".utf8) {
            self.init(type: "image/webp")
        } else {
            return nil
        }
    }

    /// The signature, then the IHDR chunk, which PNG requires first (width, height: 32-bit
    /// big-endian at bytes 16 and 20).
    private static func png(_ bytes: [UInt8]) -> ImageInfo? {
        guard bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) else { return nil }
        guard bytes.count >= 24, Array(bytes[12..<16]) == Array("IHDR".utf8) else { return ImageInfo(type: "image/png") }
        return ImageInfo(type: "image/png", width: bigEndian(bytes, 16, 4), height: bigEndian(bytes, 20, 4))
    }

    /// Walks the JPEG segments up to the first start-of-frame (SOFn: height then width,
    /// 16-bit big-endian, after the segment length and the sample precision).
    private static func jpeg(_ bytes: [UInt8]) -> ImageInfo? {
        guard bytes.count >= 3, bytes[0] == 0xFF, bytes[1] == 0xD8 else { return nil }
        var offset = 2
        while offset + 3 < bytes.count {
            guard bytes[offset] == 0xFF else { break }
            let marker = bytes[offset + 1]
            if marker == 0xFF {  // fill byte
                offset += 1
                continue
            }
            // Markers without a length: TEM, RSTn, SOI, EOI.
            if marker == 0x01 || (0xD0...0xD9).contains(marker) {
                offset += 2
                continue
            }
            let length = bigEndian(bytes, offset + 2, 2)
            guard length >= 2 else { break }
            // SOF0...SOF15, except DHT (C4), JPG (C8) and DAC (CC), which share the range.
            if (0xC0...0xCF).contains(marker), marker != 0xC4, marker != 0xC8, marker != 0xCC {
                guard offset + 9 <= bytes.count else { break }
                return ImageInfo(type: "image/jpeg", width: bigEndian(bytes, offset + 7, 2), height: bigEndian(bytes, offset + 5, 2))
            }
            offset += 2 + length
        }
        return ImageInfo(type: "image/jpeg")
    }

    private static func bigEndian(_ bytes: [UInt8], _ offset: Int, _ count: Int) -> Int {
        bytes[offset..<offset + count].reduce(0) { $0 << 8 | Int($1) }
    }
}
