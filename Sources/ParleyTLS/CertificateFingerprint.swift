import COpenSSL

/// SHA-256 fingerprints of certificates (over the DER encoding), formatted the way
/// `openssl x509 -noout -fingerprint -sha256` prints them: upper-case hex pairs joined by
/// colons. Users compare these by eye and paste them into pinning options.
public enum CertificateFingerprint {
    /// Fingerprint of the first certificate in a PEM string.
    public static func sha256(pem: String) throws -> String {
        let certificates = try PEM.certificates(from: pem)
        defer { certificates.forEach { X509_free($0) } }
        return format(try digest(of: certificates[0]))
    }

    /// Fingerprint of the first certificate in a PEM file.
    public static func sha256(pemFile path: String) throws -> String {
        try sha256(pem: try PEM.readFile(path))
    }

    /// Parses a fingerprint as users write it: with or without colons or spaces, any case.
    /// Returns the 32 raw bytes, or nil when it is not a SHA-256 fingerprint.
    public static func parse(_ text: String) -> [UInt8]? {
        let hex = text.filter { $0.isHexDigit }
        let stripped = text.filter { !($0 == ":" || $0 == " " || $0.isHexDigit) }
        guard stripped.isEmpty, hex.count == 64 else { return nil }
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        return bytes
    }

    static func format(_ digest: [UInt8]) -> String {
        let digits = Array("0123456789ABCDEF")
        return digest.map { "\(digits[Int($0 >> 4)])\(digits[Int($0 & 0x0F)])" }.joined(separator: ":")
    }

    static func digest(of x509: OpaquePointer) throws -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        OpenSSLErrorQueue.clear()
        guard X509_digest(x509, EVP_sha256(), &digest, &length) == 1 else {
            throw TLSError.configuration("X509_digest: \(OpenSSLErrorQueue.drain())")
        }
        return Array(digest.prefix(Int(length)))
    }

    /// Formatted fingerprint, or nil if hashing failed (only used for error reports).
    static func formatted(_ x509: OpaquePointer) -> String? {
        (try? digest(of: x509)).map(format)
    }
}
