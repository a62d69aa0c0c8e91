import Foundation
import ParleyCore
import ParleyTestSupport
import Testing

@testable import ParleyClient

/// XEP-0363's "a 100 MB upload with the server's RSS staying within a few MB of its starting
/// value", measured where only the server's memory counts: the real `parleyd` in a process of
/// its own, HTTPS with its generated certificate, and ParleyClient in this process sending the
/// file through the upload service as any client would.
@Suite struct UploadServerMemoryTests {
    @Test(.enabled(if: ParleydProcess.executable != nil, "parleyd built next to the tests"))
    func aHundredMegabyteUploadLeavesTheServersMemoryFlat() async throws {
        let httpPort = try LoopbackPort.unusedBelowEphemeralRange()
        let server = try ParleydProcess(
            extra: """
                http:
                  enabled: true
                  interfaces: [127.0.0.1]
                  port: \(httpPort)
                upload:
                  enabled: true
                  max_file_size: 200000000
                """)
        try server.addUser("alice", password: "secret")
        try await server.start()
        defer { server.stop() }
        let pid = try #require(server.pid)
        var configuration = try server.clientConfiguration(for: "alice", password: "secret")
        configuration.httpTrustedCertificateFile = server.directory + "/data/tls/localhost.crt"
        let client = try ChatClient(
            configuration: configuration, cachePath: server.directory + "/alice-cache.sqlite", logger: quietLogger("client.alice"))
        try await client.connect()

        func send(megabytes: Int) async throws {
            let path = server.directory + "/file-\(megabytes).bin"
            #expect(FileManager.default.createFile(atPath: path, contents: nil))
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            let megabyte = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 11) })
            for _ in 0..<megabytes { handle.write(megabyte) }
            try handle.close()
            let sent = try await client.sendFile(path, to: try JID("alice@localhost"))
            #expect(sent.media.size == Int64(megabytes << 20))
            try FileManager.default.removeItem(atPath: path)
        }
        // The first upload sets up what every upload shares (TLS, the file system's threads).
        try await send(megabytes: 1)
        try Data("5".utf8).write(to: URL(fileURLWithPath: "/proc/\(pid)/clear_refs"))
        let before = try Self.memoryKB(pid, "VmRSS")
        try await send(megabytes: 100)
        let peak = try Self.memoryKB(pid, "VmHWM")
        print("aHundredMegabyteUploadLeavesTheServersMemoryFlat: parleyd's peak RSS grew by \(peak - before) kB")
        // 2-5 MB measured (bench/upload.sh too); the file held would be 100 MB.
        #expect(peak - before < 12 * 1024, "parleyd's peak RSS grew by \(peak - before) kB during a 100 MB upload")
        let stored = (FileManager.default.subpaths(atPath: server.directory + "/data/uploads") ?? []).compactMap { path in
            (try? FileManager.default.attributesOfItem(atPath: server.directory + "/data/uploads/" + path))?[.size] as? Int
        }
        #expect(stored.contains(100 << 20))
        await client.disconnect()
    }

    static func memoryKB(_ pid: Int32, _ field: String) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix(field + ":") })
        return try #require(Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first ?? ""))
    }
}
