import PostgresNIO

/// A WHERE clause built from optional conditions (archive queries take any of a dozen
/// filters), with its values bound as parameters, never spliced into the text.
struct SQLFilter {
    private var conditions: [String] = []
    private var bindings = PostgresBindings()

    /// One condition from parts that alternate: literal SQL at even places, values to bind at
    /// odd ones, e.g. `add("(from_jid = ", jid, " OR to_jid = ", jid, ")")`.
    mutating func add(_ parts: any Sendable...) {
        var condition = ""
        for (index, part) in parts.enumerated() {
            if index % 2 == 0, let literal = part as? String {
                condition += literal
            } else {
                condition += bind(part)
            }
        }
        conditions.append(condition)
    }

    /// `prefix`, the conditions joined by AND, then `suffix`.
    func query(_ prefix: String, then suffix: String = "") -> PostgresQuery {
        PostgresQuery(unsafeSQL: prefix + " " + conditions.joined(separator: " AND ") + suffix, binds: bindings)
    }

    private mutating func bind(_ value: any Sendable) -> String {
        switch value {
        case let value as Int64: bindings.append(value)
        case let value as String: bindings.append(value)
        case let value as [String]: bindings.append(value)
        default: preconditionFailure("SQLFilter cannot bind \(type(of: value))")
        }
        return "$\(bindings.count)"
    }
}
