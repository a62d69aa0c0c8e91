import COpenSSL

/// The hash functions SCRAM is defined over in Parley: SHA-1 (RFC 5802) and SHA-256 (RFC 7677).
public enum HashFunction: String, Sendable, Hashable, CaseIterable {
    case sha1 = "SHA-1"
    case sha256 = "SHA-256"

    /// Output length in bytes; also the length of every SCRAM key and proof.
    public var digestSize: Int {
        switch self {
        case .sha1: 20
        case .sha256: 32
        }
    }

    /// OpenSSL's static `EVP_MD` for this hash; never freed (it is a built-in table entry).
    public var evpMD: OpaquePointer {
        switch self {
        case .sha1: EVP_sha1()
        case .sha256: EVP_sha256()
        }
    }

    public func digest(_ data: [UInt8]) throws(CryptoError) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = data.withNonNullBytes { input in
            EVP_Digest(input.baseAddress, input.count, &output, &length, evpMD, nil)
        }
        guard ok == 1, Int(length) == digestSize else { throw .openSSLFailure("EVP_Digest") }
        output.removeLast(output.count - Int(length))
        return output
    }

    /// HMAC (RFC 2104) keyed with `key`. An empty key is valid HMAC input, but OpenSSL does not
    /// reliably read a null pointer as "empty" (in the HMAC init functions it means "keep the
    /// previous key"), so every pointer handed over is non-null even for an empty array.
    public func hmac(key: [UInt8], data: [UInt8]) throws(CryptoError) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard key.count <= Int32.max else { throw .invalidArgument("HMAC key longer than 2 GiB") }
        let result = key.withNonNullBytes { keyBytes in
            data.withNonNullBytes { dataBytes in
                HMAC(
                    evpMD, keyBytes.baseAddress, Int32(keyBytes.count), dataBytes.baseAddress,
                    dataBytes.count, &output, &length)
            }
        }
        guard result != nil, Int(length) == digestSize else { throw .openSSLFailure("HMAC") }
        output.removeLast(output.count - Int(length))
        return output
    }
}

extension Array where Element == UInt8 {
    /// Like `withUnsafeBufferPointer`, but the base address is never nil: OpenSSL wants a valid
    /// pointer even for zero-length input.
    func withNonNullBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        if isEmpty {
            var placeholder: UInt8 = 0
            return withUnsafePointer(to: &placeholder) { body(UnsafeBufferPointer(start: $0, count: 0)) }
        }
        return withUnsafeBufferPointer(body)
    }
}
