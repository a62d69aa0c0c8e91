import COpenSSL

/// Bytes from OpenSSL's CSPRNG, for salts and nonces.
public enum SecureRandom {
    public static func bytes(_ count: Int) throws(CryptoError) -> [UInt8] {
        guard count >= 0, count <= Int32.max else {
            throw .invalidArgument("random byte count \(count) out of range")
        }
        var output = [UInt8](repeating: 0, count: count)
        guard count > 0 else { return output }
        guard RAND_bytes(&output, Int32(count)) == 1 else { throw .openSSLFailure("RAND_bytes") }
        return output
    }
}
