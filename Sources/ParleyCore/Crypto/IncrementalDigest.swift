import COpenSSL

/// A hash fed piece by piece: what hashing a file while it streams to or from disk needs
/// (XEP-0300 hashes of uploads), where `HashFunction.digest` would want all of it in memory.
/// Not Sendable: one task feeds it, then calls `finish()` once.
public final class IncrementalDigest {
    private let context: OpaquePointer
    public let function: HashFunction
    private var finished = false

    public init(_ function: HashFunction) throws(CryptoError) {
        guard let context = EVP_MD_CTX_new() else { throw .openSSLFailure("EVP_MD_CTX_new") }
        guard EVP_DigestInit_ex(context, function.evpMD, nil) == 1 else {
            EVP_MD_CTX_free(context)
            throw .openSSLFailure("EVP_DigestInit_ex")
        }
        self.context = context
        self.function = function
    }

    deinit {
        EVP_MD_CTX_free(context)
    }

    public func update(_ bytes: UnsafeRawBufferPointer) throws(CryptoError) {
        guard !finished else { throw .invalidArgument("digest already finished") }
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        guard EVP_DigestUpdate(context, base, bytes.count) == 1 else { throw .openSSLFailure("EVP_DigestUpdate") }
    }

    public func update(_ bytes: [UInt8]) throws(CryptoError) {
        let result: CryptoError? = bytes.withUnsafeBytes { raw in
            do throws(CryptoError) {
                try update(raw)
                return nil
            } catch {
                return error
            }
        }
        if let result { throw result }
    }

    /// The digest of everything fed so far; the object takes no more input after this.
    public func finish() throws(CryptoError) -> [UInt8] {
        guard !finished else { throw .invalidArgument("digest already finished") }
        finished = true
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard EVP_DigestFinal_ex(context, &output, &length) == 1, Int(length) == function.digestSize else {
            throw .openSSLFailure("EVP_DigestFinal_ex")
        }
        output.removeLast(output.count - Int(length))
        return output
    }
}
