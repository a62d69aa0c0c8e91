import ParleyTestSupport
import Testing

/// The schemas written for the profile namespaces check what matters and let the rest be:
/// a vCard's wrapper (name, case, namespace) but not the fields its owner chose; private
/// storage's query holding only elements of other namespaces; last activity's seconds.
@Suite struct ProfileSchemaTests {
    static func iq(_ payload: String) -> String {
        "<iq xmlns='jabber:client' to='alice@localhost/r' from='bob@localhost' id='x' type='result'>\(payload)</iq>"
    }

    static func valid(_ xml: String) -> Bool {
        (try? SchemaValidator.shared.validate(xml)) != nil
    }

    @Test func vCardWrapperIsCheckedItsFieldsAreNot() {
        #expect(Self.valid("<vCard xmlns='vcard-temp'/>"))
        #expect(Self.valid("<vCard xmlns='vcard-temp' version='3.0'><FN>Alice</FN><X-CUSTOM><A/></X-CUSTOM>\n<x xmlns='urn:example'/></vCard>"))
        #expect(Self.valid(Self.iq("<vCard xmlns='vcard-temp'><PHOTO><TYPE>image/png</TYPE><BINVAL>YWJj</BINVAL></PHOTO></vCard>")))
        // As the payload a server emits (validated on its own, the root must be declared).
        #expect(!Self.valid("<vcard xmlns='vcard-temp'/>"), "the wrapper's case matters")
        #expect(!Self.valid("<VCARD xmlns='vcard-temp'/>"))
        #expect(!Self.valid("<vCard xmlns='urn:ietf:params:xml:ns:vcard-4.0'/>"))
        #expect(!Self.valid("<vCard xmlns='vcard-temp' lang='en'/>"), "unknown attributes on the wrapper")
    }

    @Test func privateQueryHoldsOnlyForeignElements() {
        #expect(Self.valid(Self.iq("<query xmlns='jabber:iq:private'/>")))
        #expect(Self.valid(Self.iq("<query xmlns='jabber:iq:private'><storage xmlns='storage:bookmarks'/><a xmlns='urn:x'/></query>")))
        #expect(!Self.valid(Self.iq("<query xmlns='jabber:iq:private'><prefs/></query>")), "a child in jabber:iq:private itself")
        #expect(!Self.valid(Self.iq("<query xmlns='jabber:iq:private'>text</query>")))
    }

    @Test func lastActivitySecondsAreANumber() {
        #expect(Self.valid(Self.iq("<query xmlns='jabber:iq:last' seconds='903'>Heading Home</query>")))
        #expect(Self.valid(Self.iq("<query xmlns='jabber:iq:last' seconds='0'/>")))
        #expect(!Self.valid(Self.iq("<query xmlns='jabber:iq:last' seconds='-1'/>")))
        #expect(!Self.valid(Self.iq("<query xmlns='jabber:iq:last' seconds='soon'/>")))
        #expect(!Self.valid(Self.iq("<query xmlns='jabber:iq:last' seconds='1'><status/></query>")))
    }
}
