#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// TCP ports on 127.0.0.1 for servers a test starts in other processes (Prosody, a parleyd
/// it kills and restarts), which bind the port themselves later.
///
/// `unusedBelowEphemeralRange()`: a port the kernel hands out for `bind(0)` comes from the ephemeral range, the same range
/// every outgoing connection takes its source port from; with hundreds of test connections
/// opening at once, one of them can take the port before the server binds it. So the port is
/// drawn at random from below the ephemeral range, where no source port is ever taken, and
/// checked to be free.
public enum LoopbackPort {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    public static func unusedBelowEphemeralRange() throws -> Int {
        let candidates = 10_000..<max(10_001, ephemeralRangeStart())
        for _ in 0..<200 {
            let port = Int.random(in: candidates)
            if isFree(port) { return port }
        }
        throw Failure(description: "no free port in \(candidates) after 200 tries")
    }

    /// The first port of the kernel's ephemeral range (Linux: /proc/sys/net/ipv4/ip_local_port_range).
    static func ephemeralRangeStart() -> Int {
        let range = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? ""
        guard let low = range.split(whereSeparator: \.isWhitespace).first.flatMap({ Int($0) }), low > 10_000 else { return 32_768 }
        return low
    }

    /// Whether nothing holds `port`: a socket can bind it.
    static func isFree(_ port: Int) -> Bool {
        withSocket(port: port) { fd, address, length in bind(fd, address, length) == 0 }
    }

    /// Whether a server listens on `port`: a connection to it succeeds.
    public static func accepts(_ port: Int) -> Bool {
        withSocket(port: port) { fd, address, length in connect(fd, address, length) == 0 }
    }

    private static func withSocket(
        port: Int, _ body: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Bool
    ) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }
}
