import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import ParleyCore

#if canImport(Glibc)
import Glibc
#endif

/// `ParleyBench upload`: HTTP File Upload (XEP-0363) as a client does it, so the same run works
/// against parleyd, Prosody's `mod_http_file_share` and ejabberd's `mod_http_upload`:
/// - one account logs in over XMPP (like the login benchmark);
/// - `slots`: W slot requests unanswered at any time for T seconds → slots per second, request
///   to answer latency, server CPU per slot;
/// - per file size: `put`: slots are requested first (not timed), then the files are PUT one
///   after another over one keep-alive HTTP(S) connection, their bodies made on the fly from
///   one buffer (the client never holds a file); `get`: the same files downloaded one after
///   another, every byte counted. Each gives MB/s (MB = 2^20 bytes) and server CPU (user +
///   system from /proc) per MB, and the server's RSS before, at its peak (the kernel's VmHWM,
///   reset first) and after.
///
/// The certificate is not checked: every server here uses a self-signed one on loopback.
///
/// Exit status: 0 clean, 1 a transfer or slot failed, 3 the server has no upload service (the
/// first slot request was refused: `RESULT … phase=unsupported error=…`).
enum UploadBenchmark: Benchmark {
    static var name: String { "upload" }
    static var summary: String {
        "XEP-0363 slots/s and PUT/GET MB/s: --port P --service upload.<domain> [--sizes 1,100] [--files 50,2] [--server-pid PID]"
    }

    struct Settings: Sendable {
        var service: String
        var window: Int
        var slotSeconds: Double
        var slotSize: Int64
        /// (MiB per file, files) per transfer phase.
        var transfers: [(mebibytes: Int, files: Int)]
        /// A transfer phase starts no new file after this many seconds (a slow server).
        var phaseLimit: Double
        var chunk: Int
        var label: String
    }

    static func run(arguments: [String]) throws {
        let options = try BenchOptions(
            arguments,
            valueOptions: [
                "--host", "--port", "--domain", "--user", "--prefix", "--password", "--service", "--window",
                "--slot-seconds", "--slot-size", "--sizes", "--files", "--phase-limit", "--chunk-kib", "--server-pid",
                "--label", "--threads",
            ])
        let domain = try options.string("--domain", default: "localhost")
        let login = LoginBenchmark.Settings(
            host: try options.string("--host", default: "127.0.0.1"), port: try options.int("--port"), domain: domain,
            users: 1, firstUser: try options.int("--user", default: 1), prefix: try options.string("--prefix", default: "user"),
            password: try options.string("--password", default: "benchpass"), concurrency: 1, sources: 1, hold: true)
        let sizes = try numbers(options.string("--sizes", default: "1,100"), "--sizes")
        let files = try numbers(options.string("--files", default: "50,2"), "--files")
        guard sizes.count == files.count else { throw UsageError(description: "--sizes and --files need as many numbers") }
        let settings = Settings(
            service: try options.string("--service", default: "upload.\(domain)"),
            window: max(1, try options.int("--window", default: 16)),
            slotSeconds: Double(try options.string("--slot-seconds", default: "5")) ?? 5,
            slotSize: Int64(try options.int("--slot-size", default: 1024)),
            transfers: Array(zip(sizes, files)).map { (mebibytes: $0.0, files: $0.1) },
            phaseLimit: Double(try options.string("--phase-limit", default: "60")) ?? 60,
            chunk: max(4, try options.int("--chunk-kib", default: 256)) * 1024,
            label: try options.string("--label", default: "\(login.host):\(login.port)"))
        let server = try options.optionalString("--server-pid").map { text -> ServerProcess in
            guard let pid = Int(text) else { throw UsageError(description: "--server-pid takes a process id") }
            return ServerProcess(pid: pid)
        }
        let threads = max(1, try options.int("--threads", default: 1))
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        let session = UploadSlotSession(loop: group.next(), service: settings.service)
        let loggedIn = DispatchSemaphore(value: 0)
        let outcome = NIOLockedValueBox<LoginOutcome?>(nil)
        LoginClient.connect(
            on: session.loop, number: login.firstUser, sourceIndex: 0, settings: login, keys: SCRAMKeyCache(),
            next: { UploadClientHandler(session: session) },
            finish: { result in
                outcome.withLockedValue { $0 = result }
                loggedIn.signal()
            }
        ).whenFailure { error in
            outcome.withLockedValue { $0 = .failure("connect: \(error)") }
            loggedIn.signal()
        }
        guard loggedIn.wait(timeout: .now() + 60) == .success, case .success = outcome.withLockedValue({ $0 }) else {
            say("\(settings.label): login failed: \(String(describing: outcome.withLockedValue { $0 }))")
            exit(1)
        }
        let status = blocking { await UploadRun(settings: settings, session: session, server: server, group: group).run() }
        exit(status)
    }

    private static func numbers(_ text: String, _ option: String) throws -> [Int] {
        try text.split(separator: ",").map { part in
            guard let value = Int(part), value > 0 else { throw UsageError(description: "\(option) takes positive numbers") }
            return value
        }
    }

    /// Runs async work from the synchronous benchmark entry point.
    private static func blocking(_ work: @escaping @Sendable () async -> Int32) -> Int32 {
        let result = NIOLockedValueBox<Int32>(1)
        let done = DispatchSemaphore(value: 0)
        Task {
            let value = await work()
            result.withLockedValue { $0 = value }
            done.signal()
        }
        done.wait()
        return result.withLockedValue { $0 }
    }
}

/// One run of the upload benchmark's phases against one server.
struct UploadRun: Sendable {
    let settings: UploadBenchmark.Settings
    let session: UploadSlotSession
    let server: ServerProcess?
    let group: MultiThreadedEventLoopGroup

    func run() async -> Int32 {
        var healthy = true
        // The first slot tells whether there is an upload service at all.
        do {
            _ = try await slot(name: "probe.bin", size: settings.slotSize)
        } catch {
            say("\(settings.label): the first slot request failed: \(error)")
            let condition = "\(error)".replacingOccurrences(of: "slot refused: ", with: "").split(separator: " ").first ?? "refused"
            say("RESULT label=\(settings.label) phase=unsupported error=\(condition)")
            return 3
        }
        healthy = await slotPhase() && healthy
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .none
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 1)
        configuration.decompression = .disabled
        let client = HTTPClient(eventLoopGroupProvider: .shared(group), configuration: configuration)
        for transfer in settings.transfers {
            healthy = await transferPhases(transfer.mebibytes, files: transfer.files, client: client) && healthy
        }
        try? await client.shutdown()
        return healthy ? 0 : 1
    }

    private func slot(name: String, size: Int64) async throws -> UploadSlotSession.Slot {
        let session = self.session
        return try await session.loop.flatSubmit {
            session.request(filename: name, size: size, contentType: "application/octet-stream")
        }.get()
    }

    private func slotPhase() async -> Bool {
        let cpuBefore = server?.cpuSeconds()
        let start = NIODeadline.now()
        let end = start + .nanoseconds(Int64(settings.slotSeconds * 1e9))
        let session = self.session, window = settings.window, size = settings.slotSize
        session.loop.execute { session.startWindow(window, size: size, until: end) }
        try? await Task.sleep(for: .nanoseconds(max(0, (end - NIODeadline.now()).nanoseconds)))
        var stats = UploadSlotSession.WindowStats()
        let drain = NIODeadline.now() + .seconds(10)
        repeat {
            try? await Task.sleep(for: .milliseconds(10))
            stats = (try? await session.loop.submit { session.stats }.get()) ?? stats
        } while stats.inFlight > 0 && NIODeadline.now() < drain
        let cpu = server?.cpuSeconds().flatMap { after in cpuBefore.map { after - $0 } }
        let seconds = Double((stats.lastAnswer - start).nanoseconds) / 1e9
        let rate = seconds > 0 ? Double(stats.answered) / seconds : 0
        let latency = LatencySummary(stats.latencies)
        let cpuMicroseconds = stats.answered > 0 ? (cpu ?? 0) * 1e6 / Double(stats.answered) : 0
        say(
            "\(settings.label) slots, window \(window): \(stats.answered) in \(format(seconds, 2)) s = \(format(rate, 0))/s, "
                + "latency p50 \(format(latency.p50, 3)) ms, p99 \(format(latency.p99, 3)) ms; errors \(stats.errors)"
                + (stats.firstError.map { " (\($0))" } ?? "")
                + (cpu.map { ", server CPU \(format($0, 3)) s = \(format(cpuMicroseconds, 1)) µs/slot" } ?? ""))
        say(
            "RESULT label=\(settings.label) phase=slots answered=\(stats.answered) seconds=\(format(seconds, 3)) "
                + "rate=\(format(rate, 1)) p50_ms=\(format(latency.p50, 3)) p99_ms=\(format(latency.p99, 3)) "
                + "errors=\(stats.errors) cpu_us=\(format(cpuMicroseconds, 2))")
        return stats.errors == 0 && stats.answered > 0
    }

    /// PUT then GET `files` files of `mebibytes` MiB each.
    private func transferPhases(_ mebibytes: Int, files: Int, client: HTTPClient) async -> Bool {
        let size = Int64(mebibytes) << 20
        var slots: [UploadSlotSession.Slot] = []
        do {
            for index in 0..<files { slots.append(try await slot(name: "file-\(mebibytes)m-\(index).bin", size: size)) }
        } catch {
            say("\(settings.label): a slot for a \(mebibytes) MiB file was refused: \(error)")
            say("RESULT label=\(settings.label) phase=put size_mib=\(mebibytes) files=0 errors=1")
            return false
        }
        let chunk = ByteBuffer(repeating: 0x5A, count: min(settings.chunk, Int(size)))
        let put = await measure("put", mebibytes: mebibytes, slots: slots) { slot in
            var request = HTTPClientRequest(url: slot.put)
            request.method = .PUT
            request.headers.add(name: "Content-Type", value: "application/octet-stream")
            request.headers.add(name: "Content-Length", value: String(size))
            for header in slot.headers { request.headers.add(name: header.name, value: header.value) }
            request.body = .stream(RepeatedBody(chunk: chunk, total: Int(size)), length: .known(size))
            let response = try await client.execute(request, timeout: .seconds(600))
            _ = try await response.body.collect(upTo: 1 << 20)
            guard (200..<300).contains(response.status.code) else { throw BenchFailure("PUT answered \(response.status)") }
            return size
        }
        let get = await measure("get", mebibytes: mebibytes, slots: Array(slots.prefix(put.completed))) { slot in
            let response = try await client.execute(HTTPClientRequest(url: slot.get), timeout: .seconds(600))
            guard response.status.code == 200 else { throw BenchFailure("GET answered \(response.status)") }
            var received: Int64 = 0
            for try await part in response.body { received += Int64(part.readableBytes) }
            guard received == size else { throw BenchFailure("GET returned \(received) of \(size) bytes") }
            return received
        }
        return put.errors == 0 && get.errors == 0
    }

    struct TransferResult {
        var completed = 0
        var errors = 0
    }

    /// Runs `transfer` on each slot in turn (until the phase limit), with the server's CPU and
    /// memory read around the whole phase.
    private func measure(
        _ phase: String, mebibytes: Int, slots: [UploadSlotSession.Slot],
        _ transfer: (UploadSlotSession.Slot) async throws -> Int64
    ) async -> TransferResult {
        server?.resetPeakRSS()
        let rssBefore = server?.rssKiB() ?? 0
        let cpuBefore = server?.cpuSeconds()
        let clientBefore = ProcessCPU.seconds()
        let start = NIODeadline.now()
        let limit = start + .nanoseconds(Int64(settings.phaseLimit * 1e9))
        var result = TransferResult()
        var bytes: Int64 = 0
        var firstError: String?
        for slot in slots {
            guard NIODeadline.now() < limit || result.completed == 0 else { break }
            do {
                bytes += try await transfer(slot)
                result.completed += 1
            } catch {
                result.errors += 1
                firstError = firstError ?? "\(error)"
            }
        }
        let seconds = Double((NIODeadline.now() - start).nanoseconds) / 1e9
        let cpu = server?.cpuSeconds().flatMap { after in cpuBefore.map { after - $0 } }
        let peak = server?.peakRSSKiB() ?? 0
        // Memory handed back after the transfers, once the server has had a moment.
        try? await Task.sleep(for: .milliseconds(500))
        let rssAfter = server?.rssKiB() ?? 0
        let megabytes = Double(bytes) / Double(1 << 20)
        let rate = seconds > 0 ? megabytes / seconds : 0
        let cpuPerMB = megabytes > 0 ? (cpu ?? 0) * 1e3 / megabytes : 0
        let clientPerMB = megabytes > 0 ? (ProcessCPU.seconds() - clientBefore) * 1e3 / megabytes : 0
        say(
            "\(settings.label) \(phase.uppercased()) \(result.completed)×\(mebibytes) MiB in \(format(seconds, 2)) s = "
                + "\(format(rate, 1)) MB/s, server CPU \(format(cpuPerMB, 3)) ms/MB (load generator \(format(clientPerMB, 3)) ms/MB), "
                + "server RSS \(rssBefore / 1024) → peak \(peak / 1024) → \(rssAfter / 1024) MiB; errors \(result.errors)"
                + (firstError.map { " (\($0))" } ?? ""))
        say(
            "RESULT label=\(settings.label) phase=\(phase) size_mib=\(mebibytes) files=\(result.completed) "
                + "seconds=\(format(seconds, 3)) mb_s=\(format(rate, 1)) cpu_ms_per_mb=\(format(cpuPerMB, 3)) "
                + "client_ms_per_mb=\(format(clientPerMB, 3)) rss_before_kib=\(rssBefore) rss_peak_kib=\(peak) "
                + "rss_after_kib=\(rssAfter) errors=\(result.errors)")
        return result
    }
}

/// `total` bytes made of one buffer sent again and again: no copy, and nothing held.
struct RepeatedBody: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let chunk: ByteBuffer
    let total: Int

    struct AsyncIterator: AsyncIteratorProtocol {
        let chunk: ByteBuffer
        var remaining: Int
        mutating func next() async -> ByteBuffer? {
            guard remaining > 0 else { return nil }
            let size = Swift.min(remaining, chunk.readableBytes)
            remaining -= size
            return chunk.getSlice(at: chunk.readerIndex, length: size)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(chunk: chunk, remaining: total) }
}

/// This process's own CPU time (user + system), in seconds.
enum ProcessCPU {
    static func seconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}
