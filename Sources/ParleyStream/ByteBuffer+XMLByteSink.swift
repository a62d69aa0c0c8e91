import NIOCore
import ParleyCore

/// Lets the serializer write a stanza straight into the outgoing buffer, with no String in
/// between.
extension ByteBuffer: XMLByteSink {
    public mutating func writeUTF8(_ bytes: UnsafeRawBufferPointer) {
        writeBytes(bytes)
    }
}
