/// `--name value` options and `--flag`s for the login and seeding subcommands.
struct BenchOptions {
    private var values: [String: String] = [:]
    private var flags: Set<String> = []

    /// `valueOptions` take the next argument; `flagOptions` stand alone. Anything else is an error.
    init(_ arguments: [String], valueOptions: Set<String>, flagOptions: Set<String> = []) throws {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if flagOptions.contains(argument) {
                flags.insert(argument)
            } else if valueOptions.contains(argument) {
                guard index + 1 < arguments.count else { throw UsageError(description: "\(argument) needs a value") }
                values[argument] = arguments[index + 1]
                index += 1
            } else {
                throw UsageError(description: "unknown option \(argument)")
            }
            index += 1
        }
    }

    func string(_ name: String, default value: String? = nil) throws -> String {
        guard let result = values[name] ?? value else { throw UsageError(description: "\(name) is required") }
        return result
    }

    func optionalString(_ name: String) -> String? { values[name] }

    func int(_ name: String, default value: Int? = nil) throws -> Int {
        guard let text = values[name] else {
            guard let value else { throw UsageError(description: "\(name) is required") }
            return value
        }
        guard let result = Int(text), result >= 0 else {
            throw UsageError(description: "\(name) must be a non-negative integer, not '\(text)'")
        }
        return result
    }

    func flag(_ name: String) -> Bool { flags.contains(name) }
}
