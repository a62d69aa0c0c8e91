import COpenSSL

/// ALPN wire format (RFC 7301): each protocol name prefixed with its one-byte length.
enum ALPN {
    static func wireFormat(_ protocols: [String]) throws -> [UInt8] {
        var wire: [UInt8] = []
        for name in protocols {
            let bytes = Array(name.utf8)
            guard (1...255).contains(bytes.count) else {
                throw TLSError.configuration("ALPN protocol name must be 1 to 255 bytes: \"\(name)\"")
            }
            wire.append(UInt8(bytes.count))
            wire.append(contentsOf: bytes)
        }
        return wire
    }

    /// Server-side choice: the first of *our* protocols the client offered (server preference,
    /// so we decide what a connection on the XEP-0368 port speaks). Returns the range inside
    /// `offered`, because OpenSSL wants a pointer into memory that outlives the callback.
    static func select(preferred: [[UInt8]], offered: UnsafeBufferPointer<UInt8>) -> Range<Int>? {
        for wanted in preferred {
            var index = 0
            while index < offered.count {
                let length = Int(offered[index])
                let start = index + 1
                let end = start + length
                guard length > 0, end <= offered.count else { return nil }  // malformed list
                if length == wanted.count, offered[start..<end].elementsEqual(wanted) {
                    return start..<end
                }
                index = end
            }
        }
        return nil
    }

    /// Installed with the owning `TLSContext` as `arg`. Answering NOACK when nothing matches
    /// lets the handshake go on without ALPN instead of failing it: XMPP clients that offer
    /// only `h2` or the like on a shared port still get a usable stream.
    static let selectCallback: @convention(c) (
        OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, UnsafeMutablePointer<UInt8>?,
        UnsafePointer<UInt8>?, UInt32, UnsafeMutableRawPointer?
    ) -> Int32 = { _, out, outLength, input, inputLength, arg in
        guard let out, let outLength, let input, let arg else { return SSL_TLSEXT_ERR_NOACK }
        let context = Unmanaged<TLSContext>.fromOpaque(arg).takeUnretainedValue()
        let offered = UnsafeBufferPointer(start: input, count: Int(inputLength))
        guard let range = select(preferred: context.serverALPN, offered: offered) else {
            return SSL_TLSEXT_ERR_NOACK
        }
        out.pointee = input + range.lowerBound
        outLength.pointee = UInt8(range.count)
        return SSL_TLSEXT_ERR_OK
    }
}
