import Foundation

/// An XMPP address per RFC 7622: `[localpart@]domainpart[/resourcepart]`.
///
/// Parts are stored in their canonical form (localpart and domainpart case-folded, all parts
/// NFC-normalised), so `==` and hashing follow the RFC's comparison rules and a JID can key a
/// routing table directly.
public struct JID: Sendable, Hashable, CustomStringConvertible, Comparable {
    public let localpart: String?
    public let domainpart: String
    public let resourcepart: String?

    /// Each part is limited to 1023 bytes of UTF-8 (RFC 7622 §3.2–3.4).
    public static let maxPartBytes = 1023

    public init(_ string: String) throws(JIDError) {
        var rest = Substring(string)
        var resource: Substring? = nil
        if let slash = rest.firstIndex(of: "/") {
            resource = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
        }
        var local: Substring? = nil
        if let at = rest.firstIndex(of: "@") {
            local = rest[..<at]
            rest = rest[rest.index(after: at)...]
        }
        if let domain = Self.shared(rest) {
            let localpart = try local.map { value throws(JIDError) in try JIDPreparation.localpart(String(value)) }
            let resourcepart = try resource.map { value throws(JIDError) in try JIDPreparation.resourcepart(String(value)) }
            self.init(uncheckedLocal: localpart, domain: domain, resource: resourcepart)
            return
        }
        try self.init(
            localpart: local.map(String.init), domainpart: String(rest),
            resourcepart: resource.map(String.init))
    }

    public init(localpart: String? = nil, domainpart: String, resourcepart: String? = nil)
        throws(JIDError)
    {
        self.localpart = try localpart.map { value throws(JIDError) in try JIDPreparation.localpart(value) }
        self.domainpart = Self.shared(try JIDPreparation.domainpart(domainpart))
        self.resourcepart = try resourcepart.map { value throws(JIDError) in try JIDPreparation.resourcepart(value) }
    }

    /// Builds from parts already known to be canonical (for example taken from another JID).
    private init(uncheckedLocal: String?, domain: String, resource: String?) {
        localpart = uncheckedLocal
        domainpart = domain
        resourcepart = resource
    }

    public var bare: JID { JID(uncheckedLocal: localpart, domain: domainpart, resource: nil) }
    public var isBare: Bool { resourcepart == nil }
    public var isFull: Bool { resourcepart != nil }
    /// A JID with only a domainpart, such as the server itself.
    public var isDomain: Bool { localpart == nil && resourcepart == nil }

    /// This JID's bare form with the given resource.
    public func with(resource: String) throws(JIDError) -> JID {
        JID(uncheckedLocal: localpart, domain: domainpart, resource: try JIDPreparation.resourcepart(resource))
    }

    public var description: String {
        var result = ""
        if let localpart {
            result += localpart
            result += "@"
        }
        result += domainpart
        if let resourcepart {
            result += "/"
            result += resourcepart
        }
        return result
    }

    public static func < (lhs: JID, rhs: JID) -> Bool { lhs.description < rhs.description }
}

/// Why a string is not a valid JID; each case names the part at fault.
public enum JIDError: Error, Sendable, Hashable, CustomStringConvertible {
    case emptyPart(JIDPart)
    case partTooLong(JIDPart, bytes: Int)
    case forbiddenCharacter(JIDPart, Unicode.Scalar)
    case invalidDomain(String)

    public var description: String {
        switch self {
        case .emptyPart(let part): "the \(part) is empty"
        case .partTooLong(let part, let bytes): "the \(part) is \(bytes) bytes long (at most 1023)"
        case .forbiddenCharacter(let part, let scalar):
            "the \(part) contains the forbidden character U+\(String(scalar.value, radix: 16, uppercase: true))"
        case .invalidDomain(let reason): "the domainpart is invalid: \(reason)"
        }
    }
}

public enum JIDPart: String, Sendable, Hashable, CustomStringConvertible {
    case localpart, domainpart, resourcepart
    public var description: String { rawValue }
}
