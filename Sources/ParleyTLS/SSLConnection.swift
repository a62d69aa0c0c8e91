import COpenSSL
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One OpenSSL `SSL` over two memory BIOs: `networkIn` holds ciphertext the peer sent,
/// `networkOut` ciphertext waiting to go to the peer. It knows nothing about channels; the
/// handler moves bytes between the BIOs and the pipeline. Confined to one event loop.
final class SSLConnection {
    enum Outcome {
        case complete
        /// OpenSSL needs more input (WANT_READ); with memory BIOs WANT_WRITE cannot persist.
        case incomplete
        /// The peer's close_notify arrived (SSL_ERROR_ZERO_RETURN).
        case closedByPeer
        case failed(TLSError)
    }

    let context: TLSContext
    let serverName: String?
    private var ssl: OpaquePointer?
    private var networkIn: OpaquePointer
    private var networkOut: OpaquePointer
    /// Whether the BIOs the handshake grew were swapped for fresh ones (`releaseHandshakeBuffers`).
    private var handshakeBuffersReleased = false

    /// Set by `CertificateVerifier` while the handshake runs, so that error reports can name
    /// the certificate even though OpenSSL drops it when verification fails.
    var peerLeafDigest: [UInt8]?
    var pinMismatch = false

    init(context: TLSContext, serverName: String?) throws {
        self.context = context
        self.serverName = serverName
        OpenSSLErrorQueue.clear()
        guard let ssl = SSL_new(context.context) else {
            throw TLSError.configuration("SSL_new: \(OpenSSLErrorQueue.drain())")
        }
        guard let networkIn = BIO_new(BIO_s_mem()), let networkOut = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw TLSError.configuration("BIO_new: \(OpenSSLErrorQueue.drain())")
        }
        // An empty input BIO means "no data yet" (retry), not EOF.
        _ = parley_BIO_set_mem_eof_return(networkIn, -1)
        _ = parley_BIO_set_mem_eof_return(networkOut, -1)
        SSL_set_bio(ssl, networkIn, networkOut)  // SSL_free frees both from now on
        self.ssl = ssl
        self.networkIn = networkIn
        self.networkOut = networkOut
        _ = parley_SSL_set_app_data(ssl, Unmanaged.passUnretained(self).toOpaque())

        if context.role == .server {
            SSL_set_accept_state(ssl)
        } else {
            SSL_set_connect_state(ssl)
            if let serverName { try configurePeerName(serverName, ssl: ssl) }
        }
    }

    deinit {
        free()
    }

    /// Releases the SSL and both BIOs. Idempotent; every later operation fails with `.closed`.
    func free() {
        if let ssl {
            SSL_free(ssl)
            self.ssl = nil
        }
    }

    private func configurePeerName(_ name: String, ssl: OpaquePointer) throws {
        let isIPAddress = Self.isIPAddress(name)
        OpenSSLErrorQueue.clear()
        // SNI must not carry IP literals (RFC 6066 section 3).
        if !isIPAddress, parley_SSL_set_tlsext_host_name(ssl, name) != 1 {
            throw TLSError.configuration("invalid SNI name \(name): \(OpenSSLErrorQueue.drain())")
        }
        // Pinned mode trusts the exact certificate, whatever names it carries.
        guard context.pinnedDigest == nil else { return }
        if isIPAddress {
            guard X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name) == 1 else {
                throw TLSError.configuration("invalid IP address \(name): \(OpenSSLErrorQueue.drain())")
            }
        } else {
            SSL_set_hostflags(ssl, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
            guard SSL_set1_host(ssl, name) == 1 else {
                throw TLSError.configuration("invalid host name \(name): \(OpenSSLErrorQueue.drain())")
            }
        }
    }

    private static func isIPAddress(_ name: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, name, &v4) == 1 || inet_pton(AF_INET6, name, &v6) == 1
    }

    // MARK: Moving ciphertext

    /// Hands ciphertext from the network to OpenSSL. Memory BIOs grow, so this never blocks.
    func feed(_ buffer: ByteBuffer) {
        guard ssl != nil, buffer.readableBytes > 0 else { return }
        buffer.withUnsafeReadableBytes { bytes in
            _ = BIO_write(networkIn, bytes.baseAddress, Int32(bytes.count))
        }
    }

    /// Once after the handshake, when both BIOs are empty: swaps them for fresh ones. A memory
    /// BIO keeps the largest buffer it ever grew to, and the handshake's flights (the
    /// certificate chain out, the client's first flight in) made them about 1.4 KB together,
    /// which every idle TLS connection carried for good. Until it succeeds, each call costs
    /// two pending-byte checks.
    func releaseHandshakeBuffers() {
        guard !handshakeBuffersReleased, let ssl, BIO_ctrl_pending(networkIn) == 0, BIO_ctrl_pending(networkOut) == 0,
            let freshIn = BIO_new(BIO_s_mem())
        else { return }
        guard let freshOut = BIO_new(BIO_s_mem()) else {
            BIO_free(freshIn)
            return
        }
        _ = parley_BIO_set_mem_eof_return(freshIn, -1)
        _ = parley_BIO_set_mem_eof_return(freshOut, -1)
        SSL_set0_rbio(ssl, freshIn)  // frees the old one
        SSL_set0_wbio(ssl, freshOut)
        networkIn = freshIn
        networkOut = freshOut
        handshakeBuffersReleased = true
    }

    /// Ciphertext OpenSSL produced (handshake messages, records, alerts), or nil if none.
    func takeOutput(allocator: ByteBufferAllocator) -> ByteBuffer? {
        guard ssl != nil else { return nil }
        let pending = Int(BIO_ctrl_pending(networkOut))
        guard pending > 0 else { return nil }
        var buffer = allocator.buffer(capacity: pending)
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: pending) { bytes in
            Int(max(0, BIO_read(networkOut, bytes.baseAddress, Int32(pending))))
        }
        return buffer
    }

    // MARK: TLS operations

    func handshake() -> Outcome {
        guard let ssl else { return .failed(.closed) }
        OpenSSLErrorQueue.clear()
        let result = SSL_do_handshake(ssl)
        return result == 1 ? .complete : classify(result, ssl: ssl, duringHandshake: true)
    }

    /// Decrypts at most one record's worth, appending to `buffer`; `.complete` means bytes
    /// were added.
    func read(into buffer: inout ByteBuffer) -> Outcome {
        guard let ssl else { return .failed(.closed) }
        OpenSSLErrorQueue.clear()
        var result: Int32 = 0
        // 16 KB is the largest TLS record's plaintext, so one record always fits.
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 16 * 1024) { bytes in
            result = SSL_read(ssl, bytes.baseAddress, Int32(min(bytes.count, Int(Int32.max))))
            return result > 0 ? Int(result) : 0
        }
        return result > 0 ? .complete : classify(result, ssl: ssl, duringHandshake: false)
    }

    /// Encrypts all of `buffer` into `networkOut`. Without partial-write mode and with a memory
    /// BIO, SSL_write either takes everything or fails.
    func write(_ buffer: ByteBuffer) -> Outcome {
        guard let ssl else { return .failed(.closed) }
        return buffer.withUnsafeReadableBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let chunk = min(bytes.count - offset, 1 << 20)
                OpenSSLErrorQueue.clear()
                let result = SSL_write(ssl, bytes.baseAddress! + offset, Int32(chunk))
                guard result > 0 else { return classify(result, ssl: ssl, duringHandshake: false) }
                offset += Int(result)
            }
            return .complete
        }
    }

    /// Sends close_notify if not yet sent. `.complete` once the peer's close_notify has also
    /// been seen; `.incomplete` while we still wait for it.
    func shutdown() -> Outcome {
        guard let ssl else { return .failed(.closed) }
        OpenSSLErrorQueue.clear()
        let result = SSL_shutdown(ssl)
        switch result {
        case 1: return .complete
        case 0: return .incomplete
        default: return classify(result, ssl: ssl, duringHandshake: false)
        }
    }

    private func classify(_ result: Int32, ssl: OpaquePointer, duringHandshake: Bool) -> Outcome {
        let code = SSL_get_error(ssl, result)
        switch code {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return .incomplete
        case SSL_ERROR_ZERO_RETURN:
            return .closedByPeer
        case SSL_ERROR_SYSCALL:
            // Memory BIOs make no system calls: an empty queue here means the input ended.
            let reason = OpenSSLErrorQueue.drain(fallback: "")
            return .failed(reason.isEmpty ? .unexpectedEOF : .protocolError(reason: reason))
        default:
            let reason = OpenSSLErrorQueue.drain()
            if duringHandshake {
                return .failed(verificationError(ssl: ssl) ?? .handshakeFailed(reason: reason))
            }
            return .failed(.protocolError(reason: reason))
        }
    }

    /// Turns a failed certificate check into the specific error a user can act on.
    private func verificationError(ssl: OpaquePointer) -> TLSError? {
        guard context.role == .client else { return nil }
        let result = Int32(SSL_get_verify_result(ssl))
        guard result != X509_V_OK else { return nil }
        let fingerprint = peerLeafDigest.map(CertificateFingerprint.format)
        if pinMismatch, let pinned = context.pinnedDigest {
            return .pinnedCertificateMismatch(
                expected: CertificateFingerprint.format(pinned), actual: fingerprint)
        }
        if result == X509_V_ERR_HOSTNAME_MISMATCH || result == X509_V_ERR_IP_ADDRESS_MISMATCH {
            return .hostnameMismatch(expected: serverName ?? "", fingerprint: fingerprint)
        }
        let reason = String(cString: X509_verify_cert_error_string(Int(result)))
        return .certificateUntrusted(reason: reason, fingerprint: fingerprint)
    }

    // MARK: Negotiated parameters

    var negotiatedALPN: String? {
        guard let ssl else { return nil }
        var data: UnsafePointer<UInt8>? = nil
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    var peerCertificateFingerprint: String? {
        guard let ssl, let certificate = SSL_get0_peer_certificate(ssl) else { return nil }
        return CertificateFingerprint.formatted(certificate)
    }

    var protocolVersion: String {
        guard let ssl else { return "" }
        return String(cString: SSL_get_version(ssl))
    }

    var cipherSuite: String {
        guard let ssl, let cipher = SSL_get_current_cipher(ssl) else { return "" }
        return String(cString: SSL_CIPHER_get_name(cipher))
    }

    /// RFC 9266 `tls-exporter`: label "EXPORTER-Channel-Binding", empty context, 32 bytes.
    /// TLS 1.2 without extended master secret has no unique master secret (RFC 7627), so a
    /// binding there would not bind anything; refuse rather than hand out a weak value.
    func tlsExporter() throws -> [UInt8] {
        guard let ssl, SSL_is_init_finished(ssl) == 1 else {
            throw TLSError.channelBindingUnavailable("handshake not complete")
        }
        if SSL_version(ssl) < TLS1_3_VERSION, parley_SSL_get_extms_support(ssl) != 1 {
            throw TLSError.channelBindingUnavailable("TLS 1.2 without extended master secret")
        }
        let label = Array("EXPORTER-Channel-Binding".utf8CString.dropLast())
        var output = [UInt8](repeating: 0, count: 32)
        let emptyContext: [UInt8] = []
        OpenSSLErrorQueue.clear()
        let result = label.withUnsafeBufferPointer { labelBytes in
            SSL_export_keying_material(
                ssl, &output, output.count, labelBytes.baseAddress, labelBytes.count,
                emptyContext, 0, 1)
        }
        guard result == 1 else {
            throw TLSError.channelBindingUnavailable(OpenSSLErrorQueue.drain())
        }
        return output
    }
}
