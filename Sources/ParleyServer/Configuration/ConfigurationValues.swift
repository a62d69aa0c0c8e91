import Configuration

/// Typed reads over a `ConfigReader` that turn a missing key into the default and a bad value
/// into a `ConfigurationError` naming the key (and the environment variable, if the value
/// came from one) with the offending text.
///
/// `ConfigReader`'s optional getters return nil both for "absent" and for "not convertible";
/// reading the same key as a string tells the two apart, since every YAML scalar and every
/// environment variable reads as a string.
struct ConfigurationValues {
    let reader: ConfigReader
    /// The `PARLEYD_*` variables, keys upper-cased.
    let environment: [String: String]

    func error(_ key: String, _ reason: String) -> ConfigurationError {
        assert(ConfigurationSchema.options[key] != nil, "\(key) is missing from ConfigurationSchema")
        let variable = ConfigurationSchema.environmentVariable(for: key)
        return ConfigurationError(key: environment[variable] != nil ? "\(key) (\(variable))" : key, reason: reason)
    }

    /// The text of a value that did not convert, for the message.
    private func got(_ key: String) -> String {
        guard let raw = reader.string(forKey: ConfigKey(key)) else { return "something else" }
        return raw.isEmpty ? "an empty value" : "\"\(raw)\""
    }

    func string(_ key: String, default defaultValue: String) throws(ConfigurationError) -> String {
        guard let value = reader.string(forKey: ConfigKey(key)) else { return defaultValue }
        guard !value.isEmpty else { throw error(key, "expected a value, got an empty one") }
        return value
    }

    /// For paths whose default is derived: absent or empty means "use the default".
    func optionalString(_ key: String) -> String? {
        reader.string(forKey: ConfigKey(key)).flatMap { $0.isEmpty ? nil : $0 }
    }

    func bool(_ key: String, default defaultValue: Bool) throws(ConfigurationError) -> Bool {
        if let value = reader.bool(forKey: ConfigKey(key)) { return value }
        guard reader.string(forKey: ConfigKey(key)) != nil else { return defaultValue }
        throw error(key, "expected true or false, got \(got(key))")
    }

    /// `expected` completes "expected …" in the message, e.g. "a positive integer".
    func int(_ key: String, default defaultValue: Int, in range: ClosedRange<Int>, expected: String)
        throws(ConfigurationError) -> Int
    {
        guard let value = reader.int(forKey: ConfigKey(key)) else {
            guard let raw = reader.string(forKey: ConfigKey(key)) else { return defaultValue }
            // YAML reads `"5222"` as a string, which surprises people who quoted a number.
            let hint = Int(raw) != nil ? " (write it without quotes)" : ""
            throw error(key, "expected \(expected), got \(got(key))\(hint)")
        }
        guard range.contains(value) else { throw error(key, "expected \(expected), got \(value)") }
        return value
    }

    func positiveInt(_ key: String, default defaultValue: Int) throws(ConfigurationError) -> Int {
        try int(key, default: defaultValue, in: 1...Int.max, expected: "a positive integer")
    }

    func port(_ key: String, default defaultValue: Int, zeroMeans: String) throws(ConfigurationError) -> Int {
        try int(key, default: defaultValue, in: 0...65535, expected: "a port number from 0 (\(zeroMeans)) to 65535")
    }

    /// A duration in seconds, written as a number (`30`, `0.5`). Zero is refused unless
    /// `allowZero`, since for most timeouts it would mean "immediately".
    func seconds(_ key: String, default defaultValue: Duration, allowZero: Bool = false)
        throws(ConfigurationError) -> Duration
    {
        let expected = allowZero ? "a number of seconds, 0 or more" : "a positive number of seconds"
        guard let value = reader.double(forKey: ConfigKey(key)) else {
            guard reader.string(forKey: ConfigKey(key)) != nil else { return defaultValue }
            throw error(key, "expected \(expected), got \(got(key))")
        }
        // A cap keeps Duration's arithmetic far from overflow; a day is longer than any sane timeout.
        guard value.isFinite, allowZero ? value >= 0 : value > 0, value <= 86_400 else {
            throw error(key, "expected \(expected) up to 86400, got \(got(key))")
        }
        return .milliseconds(Int64((value * 1000).rounded()))
    }

    func choice<Choice: RawRepresentable & CaseIterable>(_ key: String, default defaultValue: Choice)
        throws(ConfigurationError) -> Choice where Choice.RawValue == String
    {
        guard let raw = reader.string(forKey: ConfigKey(key)) else { return defaultValue }
        guard let value = Choice(rawValue: raw) else {
            throw error(key, "expected one of \(Self.list(Choice.self)), got \(got(key))")
        }
        return value
    }

    /// A YAML list or a comma-separated environment variable; blank items are dropped.
    func stringList(_ key: String, default defaultValue: [String]) throws(ConfigurationError) -> [String] {
        guard let values = reader.stringArray(forKey: ConfigKey(key)) else {
            guard reader.string(forKey: ConfigKey(key)) != nil else { return defaultValue }
            throw error(key, "expected a list such as [a, b], got \(got(key))")
        }
        let items = values.map { $0.trimmingWhitespace() }.filter { !$0.isEmpty }
        guard !items.isEmpty else { throw error(key, "expected at least one item, got an empty list") }
        guard Set(items).count == items.count else { throw error(key, "lists an item more than once") }
        return items
    }

    func choiceList<Choice: RawRepresentable & CaseIterable>(_ key: String, default defaultValue: [Choice])
        throws(ConfigurationError) -> [Choice] where Choice.RawValue == String
    {
        let names = try stringList(key, default: defaultValue.map(\.rawValue))
        var result: [Choice] = []
        for name in names {
            guard let value = Choice(rawValue: name) else {
                throw error(key, "expected items from \(Self.list(Choice.self)), got \"\(name)\"")
            }
            result.append(value)
        }
        return result
    }

    private static func list<Choice: RawRepresentable & CaseIterable>(_: Choice.Type) -> String
    where Choice.RawValue == String {
        Choice.allCases.map(\.rawValue).joined(separator: ", ")
    }
}

extension String {
    fileprivate func trimmingWhitespace() -> String {
        String(drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
    }
}
