import COpenSSL

/// Replaces OpenSSL's chain verification on client contexts (`SSL_CTX_set_cert_verify_callback`)
/// so that the leaf's fingerprint is recorded before any verdict (OpenSSL discards a rejected
/// certificate) and so that pinned mode can swap the chain check for a digest comparison.
enum CertificateVerifier {
    static let callback: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Int32 = {
        store, arg in
        guard let store, let arg else { return 0 }
        let context = Unmanaged<TLSContext>.fromOpaque(arg).takeUnretainedValue()
        let connection = connection(of: store)
        let digest = X509_STORE_CTX_get0_cert(store).flatMap {
            try? CertificateFingerprint.digest(of: $0)
        }
        connection?.peerLeafDigest = digest

        guard let pinned = context.pinnedDigest else {
            // CA modes: the ordinary check, including the host name set with SSL_set1_host.
            return X509_verify_cert(store) == 1 ? 1 : 0
        }
        if let digest, digest == pinned {
            X509_STORE_CTX_set_error(store, X509_V_OK)
            return 1
        }
        connection?.pinMismatch = true
        X509_STORE_CTX_set_error(store, X509_V_ERR_CERT_UNTRUSTED)
        return 0
    }

    /// The `SSLConnection` whose handshake is being verified, via the SSL's app data.
    private static func connection(of store: OpaquePointer) -> SSLConnection? {
        guard let ssl = X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()),
            let owner = parley_SSL_get_app_data(OpaquePointer(ssl))
        else { return nil }
        return Unmanaged<SSLConnection>.fromOpaque(owner).takeUnretainedValue()
    }
}
