/// The namespace URIs Parley speaks, in one place so a typo cannot split a namespace in two.
public enum XMLNamespace {
    public static let xml = "http://www.w3.org/XML/1998/namespace"
    public static let streams = "http://etherx.jabber.org/streams"
    public static let client = "jabber:client"
    public static let server = "jabber:server"
    public static let streamErrors = "urn:ietf:params:xml:ns:xmpp-streams"
    public static let stanzaErrors = "urn:ietf:params:xml:ns:xmpp-stanzas"
    public static let tls = "urn:ietf:params:xml:ns:xmpp-tls"
    public static let sasl = "urn:ietf:params:xml:ns:xmpp-sasl"
    public static let bind = "urn:ietf:params:xml:ns:xmpp-bind"
    public static let session = "urn:ietf:params:xml:ns:xmpp-session"
}
