import COpenSSL

/// Byte operations on secrets, written so that their running time does not depend on the
/// secret contents.
public enum ConstantTime {
    /// Compares two byte strings without an early exit. The lengths are not treated as secret
    /// (SCRAM keys and proofs have public, fixed lengths), so unequal lengths return at once.
    public static func equals(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        guard !lhs.isEmpty else { return true }
        return lhs.withUnsafeBytes { left in
            rhs.withUnsafeBytes { right in
                CRYPTO_memcmp(left.baseAddress, right.baseAddress, left.count) == 0
            }
        }
    }

    /// Byte-wise XOR of two equally long strings (SCRAM's ClientProof = ClientKey XOR
    /// ClientSignature). Unequal lengths are a caller bug or hostile input, hence the error.
    public static func xor(_ lhs: [UInt8], _ rhs: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard lhs.count == rhs.count else {
            throw .invalidArgument("XOR of \(lhs.count) and \(rhs.count) bytes")
        }
        var result = lhs
        for index in result.indices { result[index] ^= rhs[index] }
        return result
    }
}
