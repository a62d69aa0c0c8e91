import Testing
@testable import ParleyCore

@Suite struct SASLElementTests {
    let sasl = XMLNamespace.sasl

    @Test func authWithInitialResponse() throws {
        let element = SASLElement.auth(mechanism: "PLAIN", initialResponse: [0, 0x75, 0, 0x70]).element
        #expect(element.xmlString() == "<auth xmlns='\(sasl)' mechanism='PLAIN'>AHUAcA==</auth>")
        #expect(try SASLElement(parsing: element) == .auth(mechanism: "PLAIN", initialResponse: [0, 0x75, 0, 0x70]))
    }

    @Test func zeroLengthRules() throws {
        let empty = SASLElement.auth(mechanism: "EXTERNAL", initialResponse: []).element
        #expect(empty.text == "=")
        #expect(try SASLElement(parsing: empty) == .auth(mechanism: "EXTERNAL", initialResponse: []))
        let absent = SASLElement.auth(mechanism: "SCRAM-SHA-1", initialResponse: nil).element
        #expect(absent.children.isEmpty)
        #expect(try SASLElement(parsing: absent) == .auth(mechanism: "SCRAM-SHA-1", initialResponse: nil))

        #expect(try SASLElement(parsing: SASLElement.success(additionalData: nil).element) == .success(additionalData: nil))
        #expect(SASLElement.success(additionalData: []).element.text == "=")
        #expect(try SASLElement(parsing: SASLElement.success(additionalData: []).element) == .success(additionalData: []))
        #expect(try SASLElement(parsing: SASLElement.challenge([]).element) == .challenge([]))
        #expect(try SASLElement(parsing: XMLElement("response", namespace: sasl, text: "=")) == .response([]))
    }

    @Test func challengeResponseSuccessRoundTrip() throws {
        let data = bytes("r=abc,s=QSXCR+Q6sek8bf92,i=4096")
        for value in [SASLElement.challenge(data), .response(data), .success(additionalData: data), .abort] {
            #expect(try SASLElement(parsing: value.element) == value)
        }
        #expect(SASLElement.abort.element.xmlString() == "<abort xmlns='\(sasl)'/>")
        #expect(
            SASLElement.challenge(bytes("abc")).element.xmlString() == "<challenge xmlns='\(sasl)'>YWJj</challenge>")
    }

    @Test func failureWithTextRoundTrips() throws {
        let failure = SASLFailure(.accountDisabled, text: "Call 212-555-1212")
        let element = SASLElement.failure(failure).element
        #expect(
            element.xmlString()
                == "<failure xmlns='\(sasl)'><account-disabled/><text xml:lang='en'>Call 212-555-1212</text></failure>")
        #expect(try SASLElement(parsing: element) == .failure(failure))
        #expect(SASLFailure.notAuthorized().element.xmlString() == "<failure xmlns='\(sasl)'><not-authorized/></failure>")
        for condition in SASLFailure.Condition.allCases {
            #expect(SASLFailure(element: SASLFailure(condition).element).condition == condition)
        }
    }

    @Test func unknownFailureConditionReadsAsNotAuthorized() {
        let element = XMLElement("failure", namespace: sasl, children: [.element(XMLElement("bogus", namespace: sasl))])
        #expect(SASLFailure(element: element) == SASLFailure(.notAuthorized))
    }

    @Test func parseErrors() {
        #expect(throws: SASLFailure.incorrectEncoding("invalid base64 in <auth/>")) {
            try SASLElement(parsing: XMLElement("auth", namespace: sasl, ["mechanism": "PLAIN"], text: "AHUAcA="))
        }
        #expect(throws: SASLFailure.incorrectEncoding("invalid base64 in <response/>")) {
            try SASLElement(parsing: XMLElement("response", namespace: sasl, text: " YWJj"))
        }
        #expect(throws: SASLFailure(.invalidMechanism, text: "no mechanism given")) {
            try SASLElement(parsing: XMLElement("auth", namespace: sasl, text: "AHUAcA=="))
        }
        #expect(throws: SASLFailure.self) { try SASLElement(parsing: XMLElement("auth", namespace: XMLNamespace.client)) }
        #expect(throws: SASLFailure.self) { try SASLElement(parsing: XMLElement("bogus", namespace: sasl)) }
    }

    @Test func mechanismsFeature() {
        let feature = SASLMechanism.featureElement(offering: [.scramSHA256, .scramSHA1, .plain])
        #expect(
            feature.xmlString()
                == "<mechanisms xmlns='\(sasl)'><mechanism>SCRAM-SHA-256</mechanism>"
                + "<mechanism>SCRAM-SHA-1</mechanism><mechanism>PLAIN</mechanism></mechanisms>")
        #expect(SASLMechanism.offered(in: feature) == ["SCRAM-SHA-256", "SCRAM-SHA-1", "PLAIN"])
        var features = XMLElement("features", namespace: XMLNamespace.streams)
        features.append(SASLMechanism.featureElement(offering: ["X-OAUTH2", "\n  PLAIN\n", "SCRAM-SHA-1"]))
        #expect(SASLMechanism.offered(in: features) == ["X-OAUTH2", "PLAIN", "SCRAM-SHA-1"])
        #expect(SASLMechanism.offered(in: XMLElement("features", namespace: XMLNamespace.streams)).isEmpty)
    }

    @Test func clientPreference() {
        #expect(SASLMechanism.preferred(among: ["PLAIN", "SCRAM-SHA-1", "SCRAM-SHA-256"], allowPlain: true) == .scramSHA256)
        #expect(SASLMechanism.preferred(among: ["PLAIN", "SCRAM-SHA-1"], allowPlain: true) == .scramSHA1)
        #expect(SASLMechanism.preferred(among: ["PLAIN", "X-OAUTH2"], allowPlain: true) == .plain)
        #expect(SASLMechanism.preferred(among: ["PLAIN"], allowPlain: false) == nil)
        #expect(SASLMechanism.preferred(among: ["SCRAM-SHA-256-PLUS", "scram-sha-1"], allowPlain: true) == nil)
        #expect(SASLMechanism.scramSHA1.scramHash == .sha1 && SASLMechanism.plain.scramHash == nil)
    }
}
