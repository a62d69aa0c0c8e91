import ParleyStorage

/// Password → stored SCRAM keys for both hashes, for tools that create or change accounts.
public enum AccountKeys {
    public static func derive(password: String, iterations: Int) throws -> [StoredSCRAMKeys] {
        try AccountCredentials.derive(password: password, iterations: iterations)
    }
}
