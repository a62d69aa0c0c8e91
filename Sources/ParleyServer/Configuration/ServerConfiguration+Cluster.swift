import Foundation

extension ServerConfiguration {
    /// Several nodes sharing one PostgreSQL database (`cluster`): each keeps a lease there,
    /// publishes its sessions, and receives stanzas for them through its inbox (ParleyCluster).
    public struct Cluster: Sendable, Hashable {
        public var enabled = false
        /// nil: `<hostname>:<c2s port>`, unique per node as long as nodes on one host listen
        /// on different ports.
        public var nodeID: String?
        /// How often the node renews its lease and looks for nodes whose lease ran out.
        public var heartbeatInterval: Duration = .seconds(1)
        /// A node whose lease was not renewed for this long is taken for dead: its sessions
        /// leave the cluster and its undelivered messages go to offline storage.
        public var leaseTimeout: Duration = .seconds(5)
        public init() {}
    }

    /// This node's id in the cluster.
    public var clusterNodeID: String {
        cluster.nodeID ?? "\(ProcessInfo.processInfo.hostName):\(c2s.port)"
    }

    static func readCluster(_ values: ConfigurationValues, into config: inout ServerConfiguration) throws(ConfigurationError) {
        config.cluster.enabled = try values.bool("cluster.enabled", default: config.cluster.enabled)
        config.cluster.nodeID = values.optionalString("cluster.node_id")
        config.cluster.heartbeatInterval = try values.seconds(
            "cluster.heartbeat_interval", default: config.cluster.heartbeatInterval)
        config.cluster.leaseTimeout = try values.seconds("cluster.lease_timeout", default: config.cluster.leaseTimeout)
        guard config.cluster.enabled else { return }
        if config.storage.backend != .postgresql {
            throw values.error(
                "cluster.enabled", "a cluster needs storage.backend postgresql (the nodes meet in its database); this server uses \(config.storage.backend.rawValue)")
        }
        if let id = config.cluster.nodeID, id.isEmpty || id.utf8.count > 200 || id.contains("|") {
            throw values.error("cluster.node_id", "expected 1 to 200 characters without '|', got \"\(id)\"")
        }
        if config.cluster.leaseTimeout < config.cluster.heartbeatInterval * 2 {
            throw values.error(
                "cluster.lease_timeout", "must be at least twice cluster.heartbeat_interval, or a node missing one beat is taken for dead")
        }
    }
}
