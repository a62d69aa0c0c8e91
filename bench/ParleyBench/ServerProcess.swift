import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The server under test, watched through /proc (it runs on this machine, on loopback):
/// CPU time (user + system) and resident memory.
struct ServerProcess {
    let pid: Int

    /// utime + stime in seconds; nil if the process is gone.
    func cpuSeconds() -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // Fields after the command name (which may contain spaces) start with field 3, state.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// VmRSS in KiB.
    func rssKiB() -> Int? { status("VmRSS") }

    /// RssAnon in KiB: the resident pages that are the process's own (heap, stacks), not its
    /// executable's and libraries' code and data, which the kernel pages in when first used
    /// and out under memory pressure from other processes.
    func anonymousRSSKiB() -> Int? { status("RssAnon") }

    /// VmHWM in KiB: the peak RSS since the start or since `resetPeakRSS`.
    func peakRSSKiB() -> Int? { status("VmHWM") }

    private func status(_ field: String) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        }
        return nil
    }

    /// Sets the peak to the current RSS (proc(5) clear_refs; needs the right to write there:
    /// the same user, or root).
    func resetPeakRSS() {
        try? Data("5".utf8).write(to: URL(fileURLWithPath: "/proc/\(pid)/clear_refs"))
    }
}

/// Nearest-rank percentiles of nanosecond samples, in milliseconds.
struct LatencySummary {
    var count: Int
    var p50: Double
    var p99: Double
    var max: Double

    init(_ samples: [Int64]) {
        let sorted = samples.sorted()
        func percentile(_ p: Double) -> Double {
            guard !sorted.isEmpty else { return 0 }
            let rank = min(sorted.count - 1, Swift.max(0, Int((p * Double(sorted.count)).rounded(.up)) - 1))
            return Double(sorted[rank]) / 1e6
        }
        count = sorted.count
        p50 = percentile(0.50)
        p99 = percentile(0.99)
        max = Double(sorted.last ?? 0) / 1e6
    }
}

func format(_ value: Double, _ decimals: Int = 2) -> String { String(format: "%.\(decimals)f", value) }
