import COpenSSL

extension HashFunction {
    /// PBKDF2 (RFC 8018 §5.2) with HMAC over this hash: SCRAM's `Hi()`. `keyLength` defaults to
    /// the digest size, which is what SCRAM uses. This is deliberately slow (≈1.5 ms for SHA-256
    /// at 4096 iterations): never call it on an event loop thread.
    public func pbkdf2(
        password: [UInt8], salt: [UInt8], iterations: Int, keyLength: Int? = nil
    ) throws(CryptoError) -> [UInt8] {
        let keyLength = keyLength ?? digestSize
        guard iterations >= 1, iterations <= Int32.max else {
            throw .invalidArgument("PBKDF2 iteration count \(iterations) out of range")
        }
        guard keyLength >= 1, keyLength <= 1024 else {
            throw .invalidArgument("PBKDF2 key length \(keyLength) out of range")
        }
        guard password.count <= Int32.max, salt.count <= Int32.max else {
            throw .invalidArgument("PBKDF2 input longer than 2 GiB")
        }
        var output = [UInt8](repeating: 0, count: keyLength)
        let ok = password.withNonNullBytes { passwordBytes in
            salt.withNonNullBytes { saltBytes in
                passwordBytes.withMemoryRebound(to: CChar.self) { passwordChars in
                    PKCS5_PBKDF2_HMAC(
                        passwordChars.baseAddress, Int32(passwordChars.count), saltBytes.baseAddress,
                        Int32(saltBytes.count), Int32(iterations), evpMD, Int32(keyLength), &output)
                }
            }
        }
        guard ok == 1 else { throw .openSSLFailure("PKCS5_PBKDF2_HMAC") }
        return output
    }
}
