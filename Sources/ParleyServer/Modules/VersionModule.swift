import ParleyCore

/// XEP-0092 software version. The operating system is left out: it helps attackers more
/// than users.
public struct VersionModule: ServerModule {
    public static let namespace = XMLNamespace.version
    public static let version = "0.1.0"

    public init() {}

    public func register(in registry: inout ModuleRegistry) throws(ModuleRegistry.Error) {
        try registry.handle(.get, "query", namespace: Self.namespace, for: .server) { _, responder in
            responder.result(
                XMLElement(
                    "query", namespace: Self.namespace, [:],
                    [XMLElement("name", text: "Parley"), XMLElement("version", text: Self.version)]))
        }
    }
}
