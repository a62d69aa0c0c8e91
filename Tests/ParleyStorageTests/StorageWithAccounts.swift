import ParleyStorage

extension SQLiteStorage {
    /// A storage in `directory` with an account for each of `users`.
    static func withAccounts(
        _ users: [String] = ["juliet", "romeo"], in directory: TemporaryDirectory, options: Options = .init()
    ) async throws -> SQLiteStorage {
        let storage = try SQLiteStorage(path: directory.file("parley.sqlite"), options: options)
        for user in users {
            try await storage.createAccount(username: user, keys: [StorageFixture.keys("SHA-256", seed: 1)])
        }
        return storage
    }
}
