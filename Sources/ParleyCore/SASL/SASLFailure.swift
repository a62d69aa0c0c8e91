/// Why a SASL negotiation failed, as the receiving entity reports it in
/// `<failure xmlns='urn:ietf:params:xml:ns:xmpp-sasl'>` (RFC 6120 §6.5). The server-side
/// mechanisms throw this, so a session turns the error straight into the element.
public struct SASLFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// The defined conditions of RFC 6120 §6.5.
    public enum Condition: String, Sendable, Hashable, CaseIterable {
        case aborted
        case accountDisabled = "account-disabled"
        case credentialsExpired = "credentials-expired"
        case encryptionRequired = "encryption-required"
        case incorrectEncoding = "incorrect-encoding"
        case invalidAuthzid = "invalid-authzid"
        case invalidMechanism = "invalid-mechanism"
        case malformedRequest = "malformed-request"
        case mechanismTooWeak = "mechanism-too-weak"
        case notAuthorized = "not-authorized"
        case temporaryAuthFailure = "temporary-auth-failure"
    }

    public var condition: Condition
    /// Human-readable detail for the `<text/>` child. Server code should keep it free of
    /// anything that tells an unknown user from a wrong password.
    public var text: String?

    public init(_ condition: Condition, text: String? = nil) {
        self.condition = condition
        self.text = text
    }

    public static func malformedRequest(_ text: String) -> SASLFailure { .init(.malformedRequest, text: text) }
    public static func notAuthorized(_ text: String? = nil) -> SASLFailure { .init(.notAuthorized, text: text) }
    public static func incorrectEncoding(_ text: String) -> SASLFailure { .init(.incorrectEncoding, text: text) }

    public var description: String {
        text.map { "\(condition.rawValue): \($0)" } ?? condition.rawValue
    }
}
