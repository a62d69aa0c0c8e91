/// The namespaces of media messages: the upload service (XEP-0363), the link every client
/// understands (XEP-0066), and what the file is (XEP-0446 with XEP-0300 hashes).
public enum MediaNamespace {
    public static let httpUpload = "urn:xmpp:http:upload:0"
    public static let outOfBand = "jabber:x:oob"
    public static let fileMetadata = "urn:xmpp:file:metadata:0"
    public static let hashes = "urn:xmpp:hashes:2"
    /// XEP-0447: Conversations and Dino wrap the metadata in this; read, never written here.
    static let statelessFileSharing = "urn:xmpp:sfs:0"
}
