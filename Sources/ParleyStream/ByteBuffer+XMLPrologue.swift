import NIOCore

extension ByteBuffer {
    /// Skips leading whitespace and an XML declaration: a WebSocket message or a BOSH body is
    /// a document of its own and may begin with one, which the running stream a parser sees
    /// may not hold.
    public mutating func skipXMLPrologue() {
        skipXMLWhitespace()
        if readableBytesView.starts(with: "<?xml".utf8), let end = readableBytesView.firstRange(of: "?>".utf8) {
            moveReaderIndex(to: end.upperBound)
            skipXMLWhitespace()
        }
    }

    private mutating func skipXMLWhitespace() {
        let count = readableBytesView.prefix { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }.count
        moveReaderIndex(forwardBy: count)
    }
}
