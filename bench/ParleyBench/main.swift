/// Benchmarks for Parley, one subcommand each: `swift run -c release ParleyBench parser`.
/// A new benchmark is a type conforming to `Benchmark`, listed in `benchmarks`.

#if canImport(Glibc)
import Glibc
#endif

protocol Benchmark {
    static var name: String { get }
    static var summary: String { get }
    static func run(arguments: [String]) throws
}

let benchmarks: [any Benchmark.Type] = [
    ParserBenchmark.self, LoginBenchmark.self, MessageBenchmark.self, OfflineBenchmark.self, PEPBenchmark.self, RosterBenchmark.self,
    MUCBenchmark.self,
    UploadBenchmark.self, ArchiveStoreBenchmark.self, SeedUsersCommand.self,
]

struct UsageError: Error, CustomStringConvertible {
    var description: String
}

@MainActor func usage() -> String {
    var text = "usage: ParleyBench <benchmark> [options]\n\nbenchmarks:\n"
    for benchmark in benchmarks {
        text += "  \(benchmark.name.padding(to: 10))\(benchmark.summary)\n"
    }
    return text
}

extension String {
    func padding(to width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard let name = arguments.first, let benchmark = benchmarks.first(where: { $0.name == name }) else {
    print(usage())
    exit(arguments.isEmpty || arguments.first == "help" || arguments.first == "--help" ? 0 : 2)
}
do {
    try benchmark.run(arguments: Array(arguments.dropFirst()))
} catch {
    print("error: \(error)\n")
    print(usage())
    exit(2)
}
