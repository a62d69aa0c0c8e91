/// XEP-0198: announces `<sm xmlns='urn:xmpp:sm:3'/>` after authentication. The protocol
/// itself lives in the session (`C2SSessionHandler+StreamManagement`, `BoundSession`): it is
/// about the stream, not about stanzas a module could handle.
public struct StreamManagementModule: ServerModule {
    public init() {}

    public func register(in registry: inout ModuleRegistry) throws(ModuleRegistry.Error) {
        registry.advertiseStreamFeature(StreamManagementXML.feature)
    }
}
