/// The SCRAM verifier of one account for one hash function (RFC 5802 §3, RFC 7677).
///
/// Plain data on purpose: storage knows nothing about SCRAM, the server converts these to its
/// own SCRAM types. A password is never stored, only what SCRAM needs to check a proof
/// (`storedKey`) and to prove the server knows the verifier (`serverKey`).
public struct StoredSCRAMKeys: Sendable, Hashable {
    /// The IANA hash name as it appears in the mechanism name: "SHA-1" or "SHA-256".
    public var hashName: String
    public var salt: [UInt8]
    public var iterations: Int
    public var storedKey: [UInt8]
    public var serverKey: [UInt8]

    public init(hashName: String, salt: [UInt8], iterations: Int, storedKey: [UInt8], serverKey: [UInt8]) {
        self.hashName = hashName
        self.salt = salt
        self.iterations = iterations
        self.storedKey = storedKey
        self.serverKey = serverKey
    }
}
