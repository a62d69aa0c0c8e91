import Testing
@testable import ParleyCore

/// What the server does with hostile or broken client messages. Uses the RFC 7677 example, so
/// every message below differs from a valid one only where the test says.
@Suite struct SASLSCRAMServerRejectionTests {
    static let example = SCRAMExample.rfc7677
    static let nonce = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
    static let proof = "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="

    /// A server that has answered the RFC's client-first and waits for client-final.
    func serverAwaitingClientFinal(clientFirst: String = example.clientFirst) throws -> SCRAMServer {
        var server = SCRAMServer(hash: .sha256, nonceGenerator: SCRAMNonce.fixed(Self.example.serverNonce))
        _ = try server.receiveClientFirst(bytes(clientFirst))
        _ = try server.serverFirst(credentials: Self.example.credentials())
        return server
    }

    func clientFinalFailure(_ message: String) throws -> SASLFailure? {
        var server = try serverAwaitingClientFinal()
        do {
            _ = try server.receiveClientFinal(bytes(message))
            return nil
        } catch {
            return error
        }
    }

    func clientFirstFailure(_ message: [UInt8], advertisesChannelBinding: Bool = false) -> SASLFailure? {
        var server = SCRAMServer(hash: .sha256, advertisesChannelBinding: advertisesChannelBinding)
        do {
            _ = try server.receiveClientFirst(message)
            return nil
        } catch {
            return error
        }
    }

    // MARK: client-final

    @Test func validMessageIsAccepted() throws {
        #expect(try clientFinalFailure(Self.example.clientFinal) == nil)
    }

    @Test func flippedProofIsNotAuthorized() throws {
        var proof = try Base64.decode(Self.proof.dropFirst(2))
        proof[0] ^= 1
        let failure = try clientFinalFailure("c=biws,r=\(Self.nonce),p=\(Base64.encode(proof))")
        #expect(failure?.condition == .notAuthorized)
    }

    @Test func otherNonceIsNotAuthorized() throws {
        #expect(try clientFinalFailure("c=biws,r=\(Self.nonce)X,\(Self.proof)")?.condition == .notAuthorized)
        #expect(try clientFinalFailure("c=biws,r=rOprNGfwEbeRWgbNEkqO,\(Self.proof)")?.condition == .notAuthorized)
    }

    @Test func channelBindingNotMatchingTheGS2HeaderIsNotAuthorized() throws {
        // "eSws" is "y,,": the client claims a different GS2 header than it sent.
        #expect(try clientFinalFailure("c=eSws,r=\(Self.nonce),\(Self.proof)")?.condition == .notAuthorized)
        // "biwsAA==" is "n,," followed by channel binding data we never asked for.
        #expect(try clientFinalFailure("c=biwsAA==,r=\(Self.nonce),\(Self.proof)")?.condition == .notAuthorized)
    }

    @Test func malformedBase64IsMalformedRequest() throws {
        #expect(try clientFinalFailure("c=biws!,r=\(Self.nonce),\(Self.proof)")?.condition == .malformedRequest)
        #expect(try clientFinalFailure("c=biws,r=\(Self.nonce),p=dHzb*apW")?.condition == .malformedRequest)
        #expect(try clientFinalFailure("c=biws,r=\(Self.nonce),p=AAAA")?.condition == .malformedRequest)  // too short
    }

    @Test(arguments: [
        "r=\(nonce),\(proof)",  // no c=
        "c=biws,\(proof)",  // no r=
        "c=biws,r=\(nonce)",  // no p=
        "c=biws,r=\(nonce),\(proof),x=extension",  // p= not last
        "r=\(nonce),c=biws,\(proof)",  // wrong order
        "c=biws,,r=\(nonce),\(proof)",  // empty attribute
        "c=biws,r=\(nonce),\(proof),",  // trailing comma
        "",
    ])
    func missingOrMisplacedAttributesAreMalformed(message: String) throws {
        #expect(try clientFinalFailure(message)?.condition == .malformedRequest)
    }

    @Test func extensionsBeforeTheProofAreIgnoredButSigned() throws {
        // An extension changes AuthMessage, so the RFC's proof no longer verifies: proof of
        // that the server signs exactly what it received rather than a reconstruction.
        #expect(try clientFinalFailure("c=biws,r=\(Self.nonce),x=1,\(Self.proof)")?.condition == .notAuthorized)
    }

    @Test func invalidUTF8IsMalformed() throws {
        var server = try serverAwaitingClientFinal()
        #expect(throws: SASLFailure.self) { try server.receiveClientFinal([0x63, 0x3D, 0xFF]) }
    }

    // MARK: client-first

    @Test func channelBindingFlags() {
        #expect(clientFirstFailure(bytes("y,,n=user,r=abc")) == nil)
        #expect(clientFirstFailure(bytes("y,,n=user,r=abc"), advertisesChannelBinding: true)?.condition == .notAuthorized)
        #expect(clientFirstFailure(bytes("p=tls-exporter,,n=user,r=abc"))?.condition == .malformedRequest)
        #expect(clientFirstFailure(bytes("x,,n=user,r=abc"))?.condition == .malformedRequest)
    }

    @Test(arguments: [
        "n,,n=user",  // no nonce
        "n,,r=abc",  // no username
        "n,,r=abc,n=user",  // wrong order
        "n,,m=ext,n=user,r=abc",  // mandatory extension
        "n,,n=,r=abc",  // empty username
        "n,,n=us=2Xer,r=abc",  // bad escape
        "n,,n=user=,r=abc",  // truncated escape
        "n,,n=user,r=",  // empty nonce
        "n,,n=user,r=a b",  // nonce with a space
        "n,x=y,n=user,r=abc",  // not an authzid
        "n,a=,n=user,r=abc",  // empty authzid
        "n,n=user,r=abc",  // no GS2 header
        "n=user,r=abc",
        "",
    ])
    func malformedClientFirst(message: String) {
        #expect(clientFirstFailure(bytes(message))?.condition == .malformedRequest)
    }

    @Test func clientFirstExtensionsAreIgnored() throws {
        var server = SCRAMServer(hash: .sha256)
        let identity = try server.receiveClientFirst(bytes("n,a=b=2Cc,n=user,r=abc,x=future"))
        #expect(identity == SCRAMServer.ClientFirst(username: "user", authzid: "b,c"))
    }

    @Test func clientFirstRejectsNULInvalidUTF8AndHugeInput() {
        #expect(clientFirstFailure(bytes("n,,n=us") + [0] + bytes("er,r=abc"))?.condition == .malformedRequest)
        #expect(clientFirstFailure(bytes("n,,n=") + [0xC3, 0x28] + bytes(",r=abc"))?.condition == .malformedRequest)
        let huge = bytes("n,,n=user,r=") + [UInt8](repeating: UInt8(ascii: "a"), count: 10_000)
        #expect(clientFirstFailure(huge)?.condition == .malformedRequest)
    }

    // MARK: ordering

    @Test func stepsOutOfOrderAndAfterFailureAreRefused() throws {
        var server = SCRAMServer(hash: .sha256)
        #expect(throws: SASLFailure.self) { try server.receiveClientFinal(bytes(Self.example.clientFinal)) }
        #expect(throws: SASLFailure.self) { try server.receiveClientFirst(bytes(Self.example.clientFirst)) }

        var fresh = SCRAMServer(hash: .sha256)
        #expect(throws: SASLFailure.self) { try fresh.serverFirst(credentials: Self.example.credentials()) }

        var replay = try serverAwaitingClientFinal()
        _ = try replay.receiveClientFinal(bytes(Self.example.clientFinal))
        #expect(throws: SASLFailure.self) { try replay.receiveClientFinal(bytes(Self.example.clientFinal)) }
    }
}
