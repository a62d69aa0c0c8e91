import Yams

/// Walks the YAML file against `ConfigurationSchema` before any value is read.
///
/// swift-configuration looks keys up on demand, so a misspelt key would simply never be
/// asked for and its value would be silently ignored. This catches that, and shape errors
/// (a list where one value belongs, a value where a section belongs) that a lookup would
/// only report as "not convertible".
enum ConfigurationFileValidator {
    /// Returns false if the file holds no options at all (empty or only comments), which
    /// swift-configuration's YAML snapshot would refuse as "not a mapping".
    static func validate(yaml: String, file: String) throws(ConfigurationError) -> Bool {
        let root: Node?
        do {
            root = try Yams.compose(yaml: yaml)
        } catch {
            let firstLine = String(describing: error).split(separator: "\n").first.map(String.init) ?? "\(error)"
            throw ConfigurationError(key: file, reason: "not valid YAML: \(firstLine)")
        }
        guard let root, !isNull(root) else { return false }
        guard case .mapping(let mapping) = root else {
            throw ConfigurationError(key: file, reason: "expected a mapping of options at the top level")
        }
        try walk(mapping, prefix: "")
        return true
    }

    private static func walk(_ mapping: Node.Mapping, prefix: String) throws(ConfigurationError) {
        for (keyNode, value) in mapping {
            guard case .scalar(let keyScalar) = keyNode else {
                throw ConfigurationError(
                    key: prefix.isEmpty ? "(top level)" : prefix, reason: "an option name must be a plain word")
            }
            let key = prefix.isEmpty ? keyScalar.string : "\(prefix).\(keyScalar.string)"
            if ConfigurationSchema.sections.contains(key) {
                if case .mapping(let nested) = value {
                    try walk(nested, prefix: key)
                } else if !isNull(value) {  // an empty section is fine: all defaults
                    throw ConfigurationError(key: key, reason: "expected a section of options, got \(describe(value))")
                }
            } else if let shape = ConfigurationSchema.options[key] {
                try check(value, against: shape, key: key)
            } else {
                let known = ConfigurationSchema.options.keys.map { $0 } + ConfigurationSchema.sections
                let hint = ConfigurationSchema.suggestion(for: key, among: known).map { " (did you mean \($0)?)" } ?? ""
                throw ConfigurationError(key: key, reason: "unknown option\(hint)")
            }
        }
    }

    private static func check(_ value: Node, against shape: ConfigurationSchema.Shape, key: String)
        throws(ConfigurationError)
    {
        if isNull(value) {
            throw ConfigurationError(key: key, reason: "no value given (delete the line to use the default)")
        }
        switch (shape, value) {
        case (.scalar, .scalar):
            return
        case (.scalar, _):
            throw ConfigurationError(key: key, reason: "expected a single value, got \(describe(value))")
        case (.list, .sequence(let items)):
            if let item = items.first(where: { if case .scalar = $0 { false } else { true } }) {
                throw ConfigurationError(key: key, reason: "expected a list of values, got an item that is \(describe(item))")
            }
        case (.list, _):
            throw ConfigurationError(key: key, reason: "expected a list such as [a, b], got \(describe(value))")
        }
    }

    /// `key:` with nothing after it, `~` or `null`.
    private static func isNull(_ node: Node) -> Bool { node.null != nil }

    private static func describe(_ node: Node) -> String {
        switch node {
        case .scalar(let scalar): "\"\(scalar.string)\""
        case .mapping: "a section"
        case .sequence: "a list"
        case .alias: "an alias"
        }
    }
}
