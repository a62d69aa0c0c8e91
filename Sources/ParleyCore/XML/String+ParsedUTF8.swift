extension String {
    /// A String of bytes libxml2 has checked to be UTF-8. Short values (`type`, `xml:lang`)
    /// fit in a String's inline storage, and copying them there beats the general decoder.
    @inline(__always)
    init(parsedUTF8 bytes: UnsafeBufferPointer<UInt8>) {
        if bytes.count > 15 {
            self.init(decoding: bytes, as: UTF8.self)
            return
        }
        self.init(unsafeUninitializedCapacity: bytes.count) { buffer in
            buffer.baseAddress.unsafelyUnwrapped.update(from: bytes.baseAddress.unsafelyUnwrapped, count: bytes.count)
            return bytes.count
        }
    }
}
