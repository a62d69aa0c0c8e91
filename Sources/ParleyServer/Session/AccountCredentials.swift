import ParleyCore
import ParleyStorage

/// The bridge between SASL's SCRAM types and the plain records the account store keeps.
enum AccountCredentials {
    /// Derives the keys for every SCRAM hash the server offers, so a password is hashed once
    /// at registration or change and never kept.
    static func derive(password: String, iterations: Int) throws -> [StoredSCRAMKeys] {
        try HashFunction.allCases.map { hash in
            StoredSCRAMKeys(try SCRAMCredentials.derive(password: password, iterations: iterations, hash: hash))
        }
    }

    static func credentials(for hash: HashFunction, in record: AccountRecord) -> SCRAMCredentials? {
        record.keys.lazy.compactMap(SCRAMCredentials.init(stored:)).first { $0.hash == hash }
    }
}

extension SCRAMCredentials {
    init?(stored keys: StoredSCRAMKeys) {
        guard let hash = HashFunction(rawValue: keys.hashName) else { return nil }
        self.init(hash: hash, salt: keys.salt, iterations: keys.iterations, storedKey: keys.storedKey, serverKey: keys.serverKey)
    }
}

extension StoredSCRAMKeys {
    init(_ credentials: SCRAMCredentials) {
        self.init(
            hashName: credentials.hash.rawValue, salt: credentials.salt, iterations: credentials.iterations,
            storedKey: credentials.storedKey, serverKey: credentials.serverKey)
    }
}
