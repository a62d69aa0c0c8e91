import COpenSSL
import Synchronization

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

    /// Two random 64-bit words from OpenSSL's generator, without an allocation or a system
    /// call (`SystemRandomNumberGenerator` makes one `getrandom` call per word): for ids made
    /// on every message. Nil if the generator fails.
    ///
    /// Drawn from a pool that OpenSSL fills 4 KiB at a time: each `RAND_bytes` call costs
    /// its provider look-up, its locks and a `getpid` (OpenSSL's fork check), ~2 µs on a
    /// virtual machine, 3 % of the server's CPU per archived message when made per id
    /// (bench/README.md, issue 17). One refill serves 256 calls.
    public static func twoWords() -> (UInt64, UInt64)? {
        pool.withLock { pool in
            if pool.next + 16 > pool.bytes.count {
                let filled = pool.bytes.withUnsafeMutableBytes {
                    RAND_bytes($0.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32($0.count)) == 1
                }
                guard filled else { return nil }
                pool.next = 0
            }
            let start = pool.next
            pool.next += 16
            return pool.bytes.withUnsafeBytes {
                ($0.loadUnaligned(fromByteOffset: start, as: UInt64.self), $0.loadUnaligned(fromByteOffset: start + 8, as: UInt64.self))
            }
        }
    }

    private struct Pool {
        var bytes = [UInt8](repeating: 0, count: 4096)
        /// Where the unused bytes start; at the end, the first call fills the pool.
        var next = 4096
    }

    private static let pool = Mutex(Pool())
}
