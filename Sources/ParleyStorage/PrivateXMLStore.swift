/// One element kept in an account's private XML storage (XEP-0049), found by its qualified
/// name: a client asks for `<storage xmlns='storage:bookmarks'/>` and gets back what was
/// stored under that name and namespace.
public struct PrivateXMLElement: Sendable, Hashable {
    public var name: String
    public var namespace: String
    /// The whole element as XML text; nil in a write means "remove it".
    public var xml: String?

    public init(name: String, namespace: String, xml: String?) {
        self.name = name
        self.namespace = namespace
        self.xml = xml
    }
}

/// Private XML storage. Users are canonical usernames; names and namespaces are compared
/// byte for byte.
public protocol PrivateXMLStore: Sendable {
    /// The stored XML of each requested (name, namespace), in the order asked; nil for those
    /// not stored (and for every one of an unknown user).
    func privateXML(of user: String, _ keys: [(name: String, namespace: String)]) async throws -> [String?]

    /// Writes (or, with `xml` nil, removes) the elements in one transaction. Returns false and
    /// writes nothing if the user would then have more than `maxElements` elements. Throws
    /// `StorageError.accountNotFound`.
    func setPrivateXML(_ elements: [PrivateXMLElement], for user: String, maxElements: Int) async throws -> Bool
}
