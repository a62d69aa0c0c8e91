/// Accounts and their SCRAM credentials.
///
/// Every method is `async` and runs its I/O off the caller's thread, so a NIO event loop can
/// call it without blocking; each call is one transaction. Usernames are compared exactly: the
/// caller normalises them.
public protocol AccountStore: Sendable {
    /// Creates an account. Throws `StorageError.accountExists` if the username is taken.
    func createAccount(username: String, keys: [StoredSCRAMKeys]) async throws

    /// The account, or nil if there is none.
    func account(username: String) async throws -> AccountRecord?

    /// The same lookup for a caller that is not a Swift task (a SASL exchange on an event
    /// loop): `completion` runs once, on a thread of the store's. A backend that can answer
    /// without a task in between (SQLite) saves the caller two thread hops per login; the
    /// default runs the `async` lookup in a task.
    func account(username: String, completion: @escaping @Sendable (Result<AccountRecord?, any Error>) -> Void)

    /// Replaces all of the account's keys (a password change) and records the change in the
    /// `AccountChangeFeed`, so that a server in another process can react to it. Throws
    /// `StorageError.accountNotFound`.
    func updateKeys(username: String, keys: [StoredSCRAMKeys], origin: AccountChange.Origin) async throws

    /// Deletes the account with everything that hangs off it and records the deletion in the
    /// `AccountChangeFeed`. Returns false if there was no such account (nothing is recorded).
    @discardableResult
    func deleteAccount(username: String, origin: AccountChange.Origin) async throws -> Bool

    /// All usernames, sorted by their bytes (so the order does not depend on a locale).
    func usernames() async throws -> [String]

    func accountCount() async throws -> Int
}

extension AccountStore {
    public func account(username: String, completion: @escaping @Sendable (Result<AccountRecord?, any Error>) -> Void) {
        Task {
            do {
                completion(.success(try await account(username: username)))
            } catch {
                completion(.failure(error))
            }
        }
    }
}
