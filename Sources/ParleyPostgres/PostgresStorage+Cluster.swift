import PostgresNIO

extension PostgresStorage {
    /// The connection pool, for ParleyCluster: its lease, directory and inbox live in the
    /// same database (migration `v8_cluster`) and some of its transactions span the stores'
    /// tables (a dead node's inbox moved to `offline_messages`).
    public var postgresClient: PostgresClient { client }
}
