import COpenSSL

/// Reading PEM through memory BIOs, so that files and in-memory strings share one code path
/// and every failure carries OpenSSL's own reason.
enum PEM {
    /// Reads a whole file; certificates and keys are small, and reading it ourselves gives a
    /// clear "cannot read <path>" instead of a PEM parse error on a missing file.
    static func readFile(_ path: String) throws -> String {
        OpenSSLErrorQueue.clear()
        guard let bio = BIO_new_file(path, "r") else {
            throw TLSError.configuration("cannot read \(path): \(OpenSSLErrorQueue.drain())")
        }
        defer { BIO_free(bio) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = BIO_read(bio, &chunk, Int32(chunk.count))
            if count <= 0 { break }
            bytes.append(contentsOf: chunk[0..<Int(count)])
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Runs `body` with a read-only memory BIO over `pem`.
    static func withBIO<T>(_ pem: String, _ body: (OpaquePointer) throws -> T) throws -> T {
        var copy = Array(pem.utf8)
        return try copy.withUnsafeMutableBytes { raw in
            OpenSSLErrorQueue.clear()
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else {
                throw TLSError.configuration("BIO_new_mem_buf: \(OpenSSLErrorQueue.drain())")
            }
            defer { BIO_free(bio) }
            return try body(bio)
        }
    }

    /// All certificates in `pem`, leaf first. The caller owns the returned references.
    static func certificates(from pem: String) throws -> [OpaquePointer] {
        try withBIO(pem) { bio in
            var result: [OpaquePointer] = []
            while let x509 = PEM_read_bio_X509(bio, nil, nil, nil) {
                result.append(x509)
            }
            // Reaching the end of the input leaves a harmless "no start line" entry.
            OpenSSLErrorQueue.clear()
            guard !result.isEmpty else {
                throw TLSError.configuration("no PEM certificate found")
            }
            return result
        }
    }

    /// The first private key in `pem` (PKCS#8, or traditional RSA/EC). The caller owns it.
    static func privateKey(from pem: String) throws -> OpaquePointer {
        try withBIO(pem) { bio in
            guard let key = PEM_read_bio_PrivateKey(bio, nil, nil, nil) else {
                throw TLSError.configuration("no usable PEM private key: \(OpenSSLErrorQueue.drain())")
            }
            return key
        }
    }

    /// Serialises a certificate as PEM.
    static func encode(certificate x509: OpaquePointer) throws -> String {
        try writeToMemory { PEM_write_bio_X509($0, x509) }
    }

    /// Serialises a private key as unencrypted PKCS#8 PEM.
    static func encode(privateKey key: OpaquePointer) throws -> String {
        try writeToMemory { PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) }
    }

    private static func writeToMemory(_ write: (OpaquePointer) -> Int32) throws -> String {
        OpenSSLErrorQueue.clear()
        guard let bio = BIO_new(BIO_s_mem()) else {
            throw TLSError.configuration("BIO_new: \(OpenSSLErrorQueue.drain())")
        }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else {
            throw TLSError.configuration("PEM write: \(OpenSSLErrorQueue.drain())")
        }
        var data: UnsafeMutablePointer<CChar>? = nil
        let length = parley_BIO_get_mem_data(bio, &data)
        guard let data, length > 0 else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }
}
