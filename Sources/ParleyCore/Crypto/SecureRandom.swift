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

    /// Two random 64-bit words from OpenSSL's generator, without an allocation or (unlike
    /// `SystemRandomNumberGenerator`, one `getrandom` call per word) a system call: for
    /// ids made on every message. Nil if the generator fails.
    public static func twoWords() -> (UInt64, UInt64)? {
        var words: (UInt64, UInt64) = (0, 0)
        let ok = withUnsafeMutableBytes(of: &words) { RAND_bytes($0.baseAddress!.assumingMemoryBound(to: UInt8.self), 16) == 1 }
        return ok ? words : nil
    }
}
