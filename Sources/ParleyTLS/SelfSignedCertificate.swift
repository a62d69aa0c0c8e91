import COpenSSL

#if canImport(Glibc)
import Glibc
private let systemWrite = Glibc.write
#elseif canImport(Darwin)
import Darwin
private let systemWrite = Darwin.write
#endif

/// A freshly generated EC P-256 key and self-signed server certificate, so that `parleyd` can
/// offer TLS on first start without an operator running the openssl CLI. Clients must pin it
/// (by `fingerprint`) or it will be refused as untrusted, which is the point.
public struct SelfSignedCertificate: Sendable {
    public let certificatePEM: String
    public let privateKeyPEM: String
    /// SHA-256, formatted as `openssl x509 -fingerprint -sha256` prints it.
    public let fingerprint: String

    /// - Parameters:
    ///   - domain: the XMPP domain; becomes the CN and a DNS subjectAltName.
    ///   - includeWildcard: also certify `*.domain` (MUC and upload components).
    public static func generate(
        domain: String, includeWildcard: Bool = true, validityDays: Int = 3650
    ) throws -> SelfSignedCertificate {
        guard !domain.isEmpty, !domain.contains(","), !domain.contains(":") else {
            throw TLSError.configuration("not a usable domain for a certificate: \"\(domain)\"")
        }
        let key = try generateKey()
        defer { EVP_PKEY_free(key) }
        OpenSSLErrorQueue.clear()
        guard let certificate = X509_new() else {
            throw TLSError.configuration("X509_new: \(OpenSSLErrorQueue.drain())")
        }
        defer { X509_free(certificate) }

        try check(X509_set_version(certificate, 2), "X509_set_version")  // 2 means v3
        try setRandomSerial(certificate)
        // An hour of back-dating tolerates clients whose clocks run a little behind.
        try check(X509_gmtime_adj(X509_getm_notBefore(certificate), -3600) != nil ? 1 : 0, "notBefore")
        try check(
            X509_gmtime_adj(X509_getm_notAfter(certificate), validityDays * 86_400) != nil ? 1 : 0,
            "notAfter")
        let name = X509_get_subject_name(certificate)
        // X.520 caps CN at 64 characters; the SAN alone names longer domains, and clients
        // have matched on the SAN only for years.
        if domain.utf8.count <= 64 {
            try check(
                X509_NAME_add_entry_by_txt(name, "CN", Int32(PARLEY_MBSTRING_ASC), domain, -1, -1, 0),
                "subject CN")
        }
        try check(X509_set_issuer_name(certificate, name), "issuer")
        try check(X509_set_pubkey(certificate, key), "public key")

        var altNames = "DNS:\(domain)"
        if includeWildcard { altNames += ",DNS:*.\(domain)" }
        try addExtensions(
            to: certificate,
            [
                // Its own trust anchor, as `openssl req -x509` makes one: a client that is
                // told to trust this file (an HTTP stack on BoringSSL, for upload URLs) takes a
                // self-signed certificate as a root only with CA:TRUE and keyCertSign.
                (NID_basic_constraints, "critical,CA:TRUE,pathlen:0"),
                (NID_key_usage, "critical,digitalSignature,keyEncipherment,keyCertSign"),
                (NID_ext_key_usage, "serverAuth"),
                (NID_subject_key_identifier, "hash"),
                (NID_subject_alt_name, altNames),
            ])
        guard X509_sign(certificate, key, EVP_sha256()) > 0 else {
            throw TLSError.configuration("X509_sign: \(OpenSSLErrorQueue.drain())")
        }
        return SelfSignedCertificate(
            certificatePEM: try PEM.encode(certificate: certificate),
            privateKeyPEM: try PEM.encode(privateKey: key),
            fingerprint: CertificateFingerprint.format(try CertificateFingerprint.digest(of: certificate)))
    }

    /// Writes both files; the key with mode 0600 from the moment it exists, so it is never
    /// readable by others, not even briefly.
    public func write(certificatePath: String, privateKeyPath: String) throws {
        try Self.writeFile(privateKeyPath, privateKeyPEM, mode: 0o600)
        try Self.writeFile(certificatePath, certificatePEM, mode: 0o644)
    }

    /// The server's first-start path: generate and write unless a certificate exists already.
    /// Returns the fingerprint of the certificate now at `certificatePath`.
    @discardableResult
    public static func createIfMissing(
        certificatePath: String, privateKeyPath: String, domain: String
    ) throws -> String {
        if access(certificatePath, F_OK) == 0, access(privateKeyPath, F_OK) == 0 {
            return try CertificateFingerprint.sha256(pemFile: certificatePath)
        }
        let generated = try generate(domain: domain)
        try generated.write(certificatePath: certificatePath, privateKeyPath: privateKeyPath)
        return generated.fingerprint
    }

    // MARK: Pieces

    private static func generateKey() throws -> OpaquePointer {
        OpenSSLErrorQueue.clear()
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else {
            throw TLSError.configuration("EVP_PKEY_CTX_new_from_name: \(OpenSSLErrorQueue.drain())")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer? = nil
        guard EVP_PKEY_keygen_init(context) == 1,
            EVP_PKEY_CTX_set_group_name(context, "P-256") == 1,
            EVP_PKEY_generate(context, &key) == 1, let key
        else {
            throw TLSError.configuration("EC key generation: \(OpenSSLErrorQueue.drain())")
        }
        return key
    }

    /// 159 random bits: positive, unique in practice, within RFC 5280's 20-octet limit.
    private static func setRandomSerial(_ certificate: OpaquePointer) throws {
        var bytes = [UInt8](repeating: 0, count: 20)
        guard RAND_bytes(&bytes, Int32(bytes.count)) == 1 else {
            throw TLSError.configuration("RAND_bytes: \(OpenSSLErrorQueue.drain())")
        }
        bytes[0] &= 0x7F
        bytes[0] |= 0x01  // keep the full length so the encoding never shrinks to zero
        guard let number = BN_bin2bn(bytes, Int32(bytes.count), nil) else {
            throw TLSError.configuration("BN_bin2bn: \(OpenSSLErrorQueue.drain())")
        }
        defer { BN_free(number) }
        guard BN_to_ASN1_INTEGER(number, X509_get_serialNumber(certificate)) != nil else {
            throw TLSError.configuration("serial number: \(OpenSSLErrorQueue.drain())")
        }
    }

    private static func addExtensions(to certificate: OpaquePointer, _ extensions: [(Int32, String)]) throws {
        var v3 = X509V3_CTX()
        X509V3_set_ctx(&v3, certificate, certificate, nil, nil, 0)
        for (nid, value) in extensions {
            OpenSSLErrorQueue.clear()
            guard let ext = X509V3_EXT_conf_nid(nil, &v3, nid, value) else {
                throw TLSError.configuration("extension \(nid) \(value): \(OpenSSLErrorQueue.drain())")
            }
            defer { X509_EXTENSION_free(ext) }
            try check(X509_add_ext(certificate, ext, -1), "X509_add_ext")
        }
    }

    private static func check(_ result: Int32, _ what: String) throws {
        guard result == 1 else {
            throw TLSError.configuration("\(what): \(OpenSSLErrorQueue.drain())")
        }
    }

    private static func writeFile(_ path: String, _ contents: String, mode: mode_t) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard descriptor >= 0 else {
            throw TLSError.configuration("cannot create \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        // O_CREAT's mode does not apply to a file that already existed.
        guard fchmod(descriptor, mode) == 0 else {
            throw TLSError.configuration("cannot chmod \(path): \(String(cString: strerror(errno)))")
        }
        let bytes = Array(contents.utf8)
        var written = 0
        while written < bytes.count {
            let result = bytes[written...].withUnsafeBytes { systemWrite(descriptor, $0.baseAddress, $0.count) }
            if result < 0, errno == EINTR { continue }
            guard result > 0 else {
                throw TLSError.configuration("cannot write \(path): \(String(cString: strerror(errno)))")
            }
            written += result
        }
    }
}
