import COpenSSL
import Foundation
import ParleyTLS
import ParleyTestSupport
import Testing

@Suite struct SelfSignedCertificateTests {
    @Test func generatedFilesLoadIntoAServerContext() throws {
        let directory = try TestCertificates.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let certificatePath = directory.appendingPathComponent("cert.pem").path
        let keyPath = directory.appendingPathComponent("key.pem").path

        let fingerprint = try SelfSignedCertificate.createIfMissing(
            certificatePath: certificatePath, privateKeyPath: keyPath, domain: "chat.example.test")
        let context = try TLSContext(
            server: TLSServerConfiguration(certificateChain: .file(certificatePath), privateKey: .file(keyPath)))
        #expect(context.role == .server)
        #expect(try CertificateFingerprint.sha256(pemFile: certificatePath) == fingerprint)

        // A second start keeps the existing certificate.
        let again = try SelfSignedCertificate.createIfMissing(
            certificatePath: certificatePath, privateKeyPath: keyPath, domain: "chat.example.test")
        #expect(again == fingerprint)
    }

    @Test func privateKeyFileIsOwnerOnly() throws {
        let directory = try TestCertificates.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyPath = directory.appendingPathComponent("key.pem").path
        // Even a pre-existing world-readable file ends up 0600.
        _ = FileManager.default.createFile(atPath: keyPath, contents: Data(), attributes: [.posixPermissions: 0o644])
        try TestCertificates.server.write(
            certificatePath: directory.appendingPathComponent("cert.pem").path, privateKeyPath: keyPath)
        let attributes = try FileManager.default.attributesOfItem(atPath: keyPath)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect(try String(contentsOfFile: keyPath, encoding: .utf8).hasPrefix("-----BEGIN PRIVATE KEY-----"))
    }

    @Test func fingerprintFormat() throws {
        let fingerprint = TestCertificates.server.fingerprint
        #expect(fingerprint.count == 32 * 3 - 1)
        let pairs = fingerprint.split(separator: ":")
        #expect(pairs.count == 32)
        #expect(pairs.allSatisfy { $0.count == 2 && $0.allSatisfy { "0123456789ABCDEF".contains($0) } })
        #expect(try CertificateFingerprint.sha256(pem: TestCertificates.server.certificatePEM) == fingerprint)
        #expect(TestCertificates.server.fingerprint != TestCertificates.other.fingerprint)
        #expect(CertificateFingerprint.parse(fingerprint)?.count == 32)
        #expect(CertificateFingerprint.parse("xyz") == nil)
    }

    @Test func fingerprintMatchesTheOpenSSLCommandLine() throws {
        let openssl = "/usr/bin/openssl"
        try #require(FileManager.default.isExecutableFile(atPath: openssl))
        let directory = try TestCertificates.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("cert.pem").path
        try TestCertificates.server.certificatePEM.write(toFile: path, atomically: true, encoding: .utf8)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: openssl)
        process.arguments = ["x509", "-in", path, "-noout", "-fingerprint", "-sha256"]
        let output = Pipe()
        process.standardOutput = output
        try ProcessLaunch.run(process)
        process.waitUntilExit()
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        // "sha256 Fingerprint=AB:CD:..."
        #expect(printed.trimmingCharacters(in: .whitespacesAndNewlines).hasSuffix("=" + TestCertificates.server.fingerprint))
    }

    @Test func certificateContents() throws {
        let certificate = try #require(Self.parse(TestCertificates.server.certificatePEM))
        defer { X509_free(certificate) }
        // Names: CN and SAN for the domain, one-label wildcard.
        #expect(X509_check_host(certificate, "example.test", 0, 0, nil) == 1)
        #expect(X509_check_host(certificate, "upload.example.test", 0, 0, nil) == 1)
        #expect(X509_check_host(certificate, "example.org", 0, 0, nil) == 0)
        // A server certificate that is also its own trust anchor (CA:TRUE, keyCertSign, no
        // intermediates below it), so a client may be told to trust this very file.
        #expect(X509_check_ca(certificate) == 1)
        #expect(X509_check_purpose(certificate, X509_PURPOSE_SSL_SERVER, 0) == 1)
        #expect(X509_get_version(certificate) == 2)
        // EC P-256, about ten years.
        let key = try #require(X509_get0_pubkey(certificate))
        #expect(EVP_PKEY_get_bits(key) == 256)
        var days: Int32 = 0
        var seconds: Int32 = 0
        #expect(ASN1_TIME_diff(&days, &seconds, X509_get0_notBefore(certificate), X509_get0_notAfter(certificate)) == 1)
        #expect((3649...3651).contains(days))
        // Self-signed: issuer is the subject, and its own key verifies the signature.
        #expect(X509_NAME_cmp(X509_get_subject_name(certificate), X509_get_issuer_name(certificate)) == 0)
        #expect(X509_verify(certificate, key) == 1)
    }

    @Test func rejectsUnusableDomain() {
        #expect(throws: TLSError.self) { try SelfSignedCertificate.generate(domain: "") }
        #expect(throws: TLSError.self) { try SelfSignedCertificate.generate(domain: "a,DNS:evil.test") }
    }

    @Test func mismatchedKeyIsRefused() {
        #expect(throws: TLSError.self) {
            try TLSContext(
                server: TLSServerConfiguration(
                    certificateChain: .pem(TestCertificates.server.certificatePEM),
                    privateKey: .pem(TestCertificates.other.privateKeyPEM)))
        }
        #expect(throws: TLSError.self) {
            try TLSContext(
                server: TLSServerConfiguration(
                    certificateChain: .file("/nonexistent/cert.pem"), privateKey: .file("/nonexistent/key.pem")))
        }
    }

    static func parse(_ pem: String) -> OpaquePointer? {
        var bytes = Array(pem.utf8)
        return bytes.withUnsafeMutableBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_X509(bio, nil, nil, nil)
        }
    }
}

extension SelfSignedCertificateTests {
    @Test func longDomainGetsSubjectAltNameOnly() throws {
        let domain = String(repeating: "a", count: 60) + ".example.test"
        let generated = try SelfSignedCertificate.generate(domain: domain, includeWildcard: false)
        let certificate = try #require(Self.parse(generated.certificatePEM))
        defer { X509_free(certificate) }
        #expect(X509_check_host(certificate, domain, 0, 0, nil) == 1)
        #expect(X509_check_host(certificate, "x." + domain, 0, 0, nil) == 0)
    }
}
