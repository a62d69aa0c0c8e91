import ParleyCore

/// Byte-exact XML a client really sends, for feeding decoders.
enum SampleStreams {
    static let clientHeader =
        "<?xml version='1.0'?><stream:stream xmlns='jabber:client' "
        + "xmlns:stream='http://etherx.jabber.org/streams' to='example.com' version='1.0' xml:lang='en'>"

    /// A whole client session on one stream: header, SASL PLAIN, bind, a message with escaped
    /// text, non-ASCII and nested payloads, presence, whitespace keepalives, a ping, the close.
    static let clientSession =
        clientHeader + "\n"
        + "<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>AGp1bGlldAByMG0zMG15cjBtMzA=</auth>"
        + " "
        + "<iq type='set' id='bind_1'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'>"
        + "<resource>balcony</resource></bind></iq>\n"
        + "<message to='romeo@example.net' from='juliet@example.com/balcony' type='chat' xml:lang='en' id='a&amp;b'>"
        + "<body>Wherefore &amp; why &lt;art&gt; thou &quot;Romeo&quot;? &#x263A; ☺ é 𝄞 日本</body>"
        + "<thread>e0ffe42b</thread>"
        + "<x xmlns='jabber:x:oob'><url>http://example.com/a?b=1&amp;c=2</url>"
        + "<desc xmlns='urn:example:other'>nested <b>bold</b> text</desc></x>"
        + "<active xmlns='http://jabber.org/protocol/chatstates'/></message>"
        + "\n\t  \r\n"
        + "<presence><show>away</show><status xml:lang='fr'>Dehors &amp; à côté</status><priority>5</priority>"
        + "<c xmlns='http://jabber.org/protocol/caps' hash='sha-1' node='http://example.com/c' ver='QgayPKawpkPSDYmwT/WM94uAlu0='/>"
        + "</presence>"
        + "   "
        + "<iq type='get' id='ping_1' to='example.com'><ping xmlns='urn:xmpp:ping'/></iq>"
        + " \n"
        + "</stream:stream>"

    static var clientSessionBytes: [UInt8] { Array(clientSession.utf8) }

    /// The message stanza of `clientSession` as the parser must build it.
    static let expectedMessage: XMLElement = {
        var message = XMLElement(
            "message", namespace: XMLNamespace.client,
            attributes: [
                XMLAttribute("to", "romeo@example.net"), XMLAttribute("from", "juliet@example.com/balcony"),
                XMLAttribute("type", "chat"), XMLAttribute("lang", "en", namespace: XMLNamespace.xml),
                XMLAttribute("id", "a&b"),
            ])
        message.append(XMLElement("body", text: "Wherefore & why <art> thou \"Romeo\"? ☺ ☺ é 𝄞 日本"))
        message.append(XMLElement("thread", text: "e0ffe42b"))
        var oob = XMLElement("x", namespace: "jabber:x:oob")
        oob.append(XMLElement("url", text: "http://example.com/a?b=1&c=2"))
        var desc = XMLElement("desc", namespace: "urn:example:other")
        desc.append(text: "nested ")
        desc.append(XMLElement("b", text: "bold"))
        desc.append(text: " text")
        oob.append(desc)
        message.append(oob)
        message.append(XMLElement("active", namespace: "http://jabber.org/protocol/chatstates"))
        return message
    }()
}
