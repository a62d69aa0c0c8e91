import ParleyCore
import Testing

@testable import ParleyServer

/// XEP-0115 §5: the verification string and its SHA-1, checked against the XEP's own
/// examples (§5.2 simple, §5.3 with an extended form), and the §5.4 refusals.
@Suite struct EntityCapabilitiesTests {
    static func query(_ xml: String) throws -> XMLElement {
        let parser = XMLStreamParser()
        let events = try parser.feed(Array("<stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>\(xml)".utf8))
        for case .stanza(let element) in events { return element }
        throw ScenarioFailure("no element in \(xml)")
    }

    @Test func theSimpleExampleOfSection5_2() throws {
        let query = try Self.query(
            """
            <query xmlns='http://jabber.org/protocol/disco#info'>\
            <identity category='client' name='Exodus 0.9.1' type='pc'/>\
            <feature var='http://jabber.org/protocol/caps'/>\
            <feature var='http://jabber.org/protocol/disco#info'/>\
            <feature var='http://jabber.org/protocol/disco#items'/>\
            <feature var='http://jabber.org/protocol/muc'/></query>
            """)
        #expect(
            EntityCapabilities.verificationString(of: query)
                == "client/pc//Exodus 0.9.1<http://jabber.org/protocol/caps<http://jabber.org/protocol/disco#info<http://jabber.org/protocol/disco#items<http://jabber.org/protocol/muc<"
        )
        #expect(EntityCapabilities.sha1Ver(of: query) == "QgayPKawpkPSDYmwT/WM94uAlu0=")
    }

    @Test func theComplexExampleOfSection5_3() throws {
        let query = try Self.query(
            """
            <query xmlns='http://jabber.org/protocol/disco#info' node='http://psi-im.org#q07IKJEyjvHSyhy//CH0CxmKi8w='>\
            <identity xml:lang='en' category='client' name='Psi 0.11' type='pc'/>\
            <identity xml:lang='el' category='client' name='Ψ 0.11' type='pc'/>\
            <feature var='http://jabber.org/protocol/caps'/>\
            <feature var='http://jabber.org/protocol/disco#info'/>\
            <feature var='http://jabber.org/protocol/disco#items'/>\
            <feature var='http://jabber.org/protocol/muc'/>\
            <x xmlns='jabber:x:data' type='result'>\
            <field var='FORM_TYPE' type='hidden'><value>urn:xmpp:dataforms:softwareinfo</value></field>\
            <field var='ip_version'><value>ipv4</value><value>ipv6</value></field>\
            <field var='os'><value>Mac</value></field>\
            <field var='os_version'><value>10.5.1</value></field>\
            <field var='software'><value>Psi</value></field>\
            <field var='software_version'><value>0.11</value></field></x></query>
            """)
        #expect(EntityCapabilities.sha1Ver(of: query) == "q07IKJEyjvHSyhy//CH0CxmKi8w=")
    }

    @Test func duplicatesAreNotTrusted() throws {
        let features = try Self.query(
            "<query xmlns='http://jabber.org/protocol/disco#info'><feature var='a'/><feature var='a'/></query>")
        #expect(EntityCapabilities.sha1Ver(of: features) == nil)
        let forms = try Self.query(
            """
            <query xmlns='http://jabber.org/protocol/disco#info'>\
            <x xmlns='jabber:x:data' type='result'><field var='FORM_TYPE' type='hidden'><value>urn:x</value></field></x>\
            <x xmlns='jabber:x:data' type='result'><field var='FORM_TYPE' type='hidden'><value>urn:x</value></field></x></query>
            """)
        #expect(EntityCapabilities.sha1Ver(of: forms) == nil)
    }

    @Test func notifyFeaturesNameTheirNodes() {
        #expect(
            NotifyInterests.notifyNodes(in: ["urn:xmpp:avatar:metadata+notify", "urn:xmpp:avatar:metadata", "http://jabber.org/protocol/nick+notify"])
                == ["urn:xmpp:avatar:metadata", "http://jabber.org/protocol/nick"])
    }
}
