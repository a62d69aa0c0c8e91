import Foundation
import ParleyCore

/// What an XEP-0313 query asks the same way of an account's archive and of a room's: XEP-0059
/// paging in `<set/>` and XEP-0082 dates in the form, so both archives refuse the same input
/// with the same errors.
public struct ArchivePaging: Sendable, Hashable {
    public var max: Int?
    public var after: String?
    public var before: String?

    /// Reads `set` (nil: no paging asked). Paging by index is refused: the archives page by id.
    public init(_ set: XMLElement?) throws(StanzaError) {
        guard let set else { return }
        if let max = set.firstChild("max", namespace: XMLNamespace.resultSetManagement) {
            guard let value = Int(max.text), value >= 0 else { throw StanzaError(.badRequest, text: "<max/> is a count.") }
            self.max = value
        }
        if let after = set.firstChild("after", namespace: XMLNamespace.resultSetManagement) {
            guard !after.text.isEmpty else { throw StanzaError(.badRequest, text: "<after/> names an id.") }
            self.after = after.text
        }
        // An empty <before/> is meaningful: the last page.
        if let before = set.firstChild("before", namespace: XMLNamespace.resultSetManagement) { self.before = before.text }
        if set.firstChild("index", namespace: XMLNamespace.resultSetManagement) != nil {
            throw StanzaError(.featureNotImplemented, text: "Paging by index is not supported; use after and before.")
        }
    }

    /// The `start` or `end` field of a query form: an XEP-0082 date and time, or `bad-request`.
    public static func date(field name: String, _ value: String) throws(StanzaError) -> Date {
        guard let date = date(value) else {
            throw StanzaError(.badRequest, text: "'\(name)' is not an XEP-0082 date and time.")
        }
        return date
    }

    /// An XEP-0082 date and time, with or without fractional seconds.
    public static func date(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }
}
